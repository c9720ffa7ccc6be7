package tugctl

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// boundPod creates a pod bound to node with the given labels and phase.
func boundPod(t *testing.T, e *env, name, node, phase string, lbl map[string]string) {
	t.Helper()
	mustCreate(t, e.c, testPod(name, lbl))
	if node != "" {
		if _, err := e.c.Bind(ctxT(t), "default", name, node, 0); err != nil {
			t.Fatal(err)
		}
	}
	if phase != "" {
		st := &v1.PodStatus{Phase: phase}
		if phase == "Running" {
			st.Conditions = []*v1.Condition{{Type: "Ready", Status: "True"}}
		}
		setPodStatus(t, e.c, name, st)
	}
}

func TestLogsAndExecTargets(t *testing.T) {
	e := newEnv(t)
	n1 := e.startFakeNode("n1")
	boundPod(t, e, "web", "n1", "Running", nil)
	mustCreate(t, e.c, testPod("pending", nil))

	r := mustOK(t, e.run("logs", "web"))
	if r.out != "n1/web line 1\nn1/web line 2\nn1/web line 3\n" {
		t.Errorf("logs printed %q", r.out)
	}
	mustOK(t, e.run("logs", "pod/web", "-c", "c", "--previous", "--tail", "5"))
	if req := n1.lastLogRequest(); req.Container != "c" || !req.Previous || req.TailLines != 5 || req.Follow || req.Namespace != "default" {
		t.Errorf("logs request = %v", req)
	}
	mustOK(t, e.run("logs", "web"))
	if req := n1.lastLogRequest(); req.TailLines != 0 {
		t.Errorf("default --tail sent tail_lines %d, want 0 (all)", req.TailLines)
	}
	mustFail(t, e.run("logs", "web", "--tail", "0"), "--tail 0: want a positive number")
	mustFail(t, e.run("logs", "web", "-c", "missing"), `container "missing" not found`)
	mustFail(t, e.run("logs", "pending"), "not scheduled to a node yet")
	mustFail(t, e.run("logs", "nope"), `pods "nope" not found`)
	mustFail(t, e.run("logs", "svc/web"), "want a pod, a deployment or a replica set, not services")

	// A deployment's pods: the running, ready one is picked.
	sel := map[string]string{"app": "api"}
	mustCreate(t, e.c, &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "api", Namespace: "default"},
		Spec: &v1.DeploymentSpec{
			Selector: &v1.LabelSelector{MatchLabels: sel},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: sel}, Spec: testPod("x", nil).Spec},
		},
	})
	boundPod(t, e, "api-a", "", "", sel)
	boundPod(t, e, "api-b", "n1", "Running", sel)
	boundPod(t, e, "api-c", "n1", "Pending", sel)
	r = mustOK(t, e.run("logs", "deploy/api"))
	if !strings.HasPrefix(r.out, "n1/api-b line 1") || r.err != "Found 3 pods, using pod/api-b\n" {
		t.Errorf("deploy/api: %v", r)
	}
	mustFail(t, e.run("logs", "deploy/none"), `deployments.apps "none" not found`)

	// -f streams until interrupted, then exits 0.
	b := e.start("logs", "web", "-f")
	wait.Eventually(t, 10*time.Second, "followed lines", outputHas(b.out, "n1/web line 6\n"))
	b.cancel()
	if code := b.wait(t, 10*time.Second); code != 0 {
		t.Errorf("logs -f exited %d after interrupt: %s", code, b.err.String())
	}
	if req := n1.lastLogRequest(); !req.Follow {
		t.Errorf("-f did not ask to follow: %v", req)
	}

	// exec resolves its POD argument the same way.
	r = mustOK(t, e.run("exec", "deploy/api", "-c", "c", "--", "echo", "hi", "there"))
	if r.out != "n1/api-b/c tty=false: hi there\n" {
		t.Errorf("exec deploy/api printed %v", r)
	}
}

func TestLogsOptions(t *testing.T) {
	e := newEnv(t)
	n1 := e.startFakeNode("n1")
	sel := map[string]string{"app": "web"}
	boundPod(t, e, "web-a", "n1", "Running", sel)
	boundPod(t, e, "web-b", "n1", "Running", sel)
	two := testPod("two", nil)
	two.Spec.InitContainers = []*v1.Container{{Name: "init", Image: "busybox:1"}}
	two.Spec.Containers = append(two.Spec.Containers, &v1.Container{Name: "side", Image: "busybox:1"})
	mustCreate(t, e.c, two)
	if _, err := e.c.Bind(ctxT(t), "default", "two", "n1", 0); err != nil {
		t.Fatal(err)
	}

	// The options reach the kubelet as the request's fields.
	mustOK(t, e.run("logs", "web-a", "--since=90s", "--timestamps", "--limit-bytes=100"))
	if req := n1.lastLogRequest(); req.SinceSeconds != 90 || !req.Timestamps || req.LimitBytes != 100 || req.SinceTime != nil {
		t.Errorf("request: %v", req)
	}
	mustOK(t, e.run("logs", "web-a", "--since-time=2024-05-01T10:00:00Z"))
	if req := n1.lastLogRequest(); req.SinceTime.AsTime().Format(time.RFC3339) != "2024-05-01T10:00:00Z" || req.SinceSeconds != 0 {
		t.Errorf("request: %v", req)
	}

	// -l: every matching pod, in name order, 10 lines each by default;
	// --prefix names each line's pod and container.
	r := mustOK(t, e.run("logs", "-l", "app=web", "--prefix"))
	want := "[pod/web-a/c] n1/web-a line 1\n[pod/web-a/c] n1/web-a line 2\n[pod/web-a/c] n1/web-a line 3\n" +
		"[pod/web-b/c] n1/web-b line 1\n[pod/web-b/c] n1/web-b line 2\n[pod/web-b/c] n1/web-b line 3\n"
	if r.out != want {
		t.Errorf("logs -l --prefix:\n%s", r.out)
	}
	if req := n1.lastLogRequest(); req.TailLines != 10 {
		t.Errorf("-l sent tail_lines %d, want kubectl's 10", req.TailLines)
	}
	// --all-containers: init containers first.
	before := len(n1.logReqs)
	r = mustOK(t, e.run("logs", "two", "--all-containers", "--prefix"))
	n1.mu.Lock()
	var got []string
	for _, req := range n1.logReqs[before:] {
		got = append(got, req.Container)
	}
	n1.mu.Unlock()
	if strings.Join(got, ",") != "init,c,side" || !strings.HasPrefix(r.out, "[pod/two/init] n1/two line 1\n") || !strings.Contains(r.out, "[pod/two/side] n1/two line 3\n") {
		t.Errorf("--all-containers asked for %v and printed\n%s", got, r.out)
	}
	// -f on several logs reads them at once, each line whole.
	b := e.start("logs", "-f", "-l", "app=web", "--prefix")
	wait.Eventually(t, 10*time.Second, "both followed", func() error {
		s := b.out.String()
		if !strings.Contains(s, "[pod/web-a/c] n1/web-a line 6\n") || !strings.Contains(s, "[pod/web-b/c] n1/web-b line 6\n") {
			return fmt.Errorf("so far %q", s)
		}
		return nil
	})
	b.cancel()
	b.wait(t, 10*time.Second)

	mustFail(t, e.run("logs", "-f", "-l", "app=web", "--max-log-requests=1"), "you are attempting to follow 2 log streams, but maximum allowed concurrency is 1")
	mustFail(t, e.run("logs", "web-a", "--since=5m", "--since-time=2024-05-01T10:00:00Z"), "--since, --since-time: at most one of them")
	mustFail(t, e.run("logs", "web-a", "--since-time=yesterday"), `--since-time "yesterday": want an RFC 3339 time`)
	mustFail(t, e.run("logs", "web-a", "--limit-bytes=-1"), "--limit-bytes -1: must be positive")
	mustFail(t, e.run("logs", "web-a", "-l", "app=web"), "name a pod or use -l, not both")
	mustFail(t, e.run("logs"), "name a pod")
	mustFail(t, e.run("logs", "-l", "app=none"), "no pods in namespace default match app=none")
	mustFail(t, e.run("logs", "-l", "app in (x"), `-l "app in (x"`)
	mustFail(t, e.run("logs", "two", "-c", "c", "--all-containers"), "--container c, --all-containers: one or the other")
}
