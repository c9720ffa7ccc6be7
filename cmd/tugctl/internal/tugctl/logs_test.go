package tugctl

import (
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
	mustFail(t, e.run("logs", "nope"), `pods "default/nope" not found`)
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
	mustFail(t, e.run("logs", "deploy/none"), `deployments "default/none" not found`)

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
