package kubectl_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/kubeapi/kubectltest"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/internal/syncbuf"
)

var (
	bins   *cluster.Binaries
	tugctl string // the binary, built next to the cluster's by TestMain
)

func TestMain(m *testing.M) {
	os.Exit(cluster.TestMainWith(m, &bins, map[string]*string{"tugctl": &tugctl}))
}

type env struct {
	c          *cluster.Cluster
	dir        string
	kubeconfig string
}

func kubectlPath(t *testing.T) string { return kubectltest.Path(t) }

func (e *env) cmd(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, kubectlPath(t), args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig, "HOME="+e.dir)
	return cmd
}

func (e *env) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := e.cmd(ctx, t, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// background runs kubectl until the test ends and collects its output.
type background struct {
	syncbuf.Buffer
}

func (e *env) background(t *testing.T, stdin io.Reader, args ...string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := e.cmd(ctx, t, args...)
	b := &background{}
	cmd.Stdout, cmd.Stderr, cmd.Stdin = b, b, stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return b
}

func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	wait.Eventually(t, 90*time.Second, what, f)
}

func TestKubectlOnNodes(t *testing.T) {
	kubectlPath(t)
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 2, Images: []string{"busybox", "echo"}})
	e := &env{c: c, dir: t.TempDir()}
	pki := c.PKIDir()
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	kubectltest.Kubeconfig(t, e.kubeconfig, c.KubeServer, filepath.Join(pki, "ca.crt"), "admin",
		fmt.Sprintf("client-certificate: %s\nclient-key: %s", filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key")))
	if err := c.WaitNodesReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.kubectl(t, "run", "talker", "--image="+images.BusyboxRef, "--image-pull-policy=IfNotPresent", "--restart=Never",
		"--overrides", `{"spec":{"nodeName":"node1"}}`, "--", "sh", "-c", `i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.2; done`)
	e.kubectl(t, "wait", "--for=condition=Ready", "pod/talker", "--timeout=90s")
	t.Run("logs -f", func(t *testing.T) { testLogs(t, e) })
	t.Run("exec -it", func(t *testing.T) { testExec(t, e) })
	t.Run("cp", func(t *testing.T) { testCp(t, e) })
	t.Run("port-forward", func(t *testing.T) { testPortForward(t, e) })
	t.Run("top", func(t *testing.T) { testTop(t, e) })
	t.Run("patch --subresource resize", func(t *testing.T) { testResize(t, e) })
	t.Run("drain", func(t *testing.T) { testDrain(t, e) })
}

// testResize: kubectl patch --subresource resize raises a running
// container's cpu limit; the kubelet applies it in place (restartCount 0,
// the container's cpu quota read by kubectl exec) and reports it in
// status.containerStatuses[].resources.
func testResize(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	apply := e.cmd(ctx, t, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: resized}
spec:
  nodeName: node1
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: ` + images.BusyboxRef + `
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 200m, memory: 64Mi}
`)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	e.kubectl(t, "wait", "--for=condition=Ready", "pod/resized", "--timeout=90s")
	quota := func() string {
		return strings.TrimSpace(e.kubectl(t, "exec", "resized", "--", "sh", "-c",
			"cat /sys/fs/cgroup/cpu.max 2>/dev/null || cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us"))
	}
	if q := quota(); !strings.HasPrefix(q, "20000") {
		t.Fatalf("cpu quota before: %q", q)
	}
	if out := e.kubectl(t, "patch", "pod", "resized", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"500m"}}}]}}`); !strings.Contains(out, "pod/resized patched") {
		t.Fatalf("kubectl patch --subresource resize: %q", out)
	}
	eventually(t, "the resize applied", func() error {
		// (restartCount 0 is left out of the JSON: "500m " is no restart.)
		got := e.kubectl(t, "get", "pod", "resized", "-o", "jsonpath={.status.containerStatuses[0].resources.limits.cpu} {.status.containerStatuses[0].restartCount}")
		if got != "500m " && got != "500m 0" {
			return fmt.Errorf("status resources.limits.cpu and restartCount: %q", got)
		}
		return nil
	})
	if q := quota(); !strings.HasPrefix(q, "50000") {
		t.Errorf("cpu quota after: %q", q)
	}
	e.kubectl(t, "delete", "pod", "resized", "--wait=false")
}

func testLogs(t *testing.T, e *env) {
	b := e.background(t, nil, "logs", "-f", "talker", "--tail=1")
	eventually(t, "followed log lines", func() error {
		if n := strings.Count(b.String(), "line "); n < 5 {
			return fmt.Errorf("%d lines so far: %q", n, b.String())
		}
		return nil
	})
	var prev int
	for i, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[:5] {
		var n int
		if _, err := fmt.Sscanf(l, "line %d", &n); err != nil || i > 0 && n != prev+1 {
			t.Fatalf("log lines out of order or odd: %q", b.String())
		}
		prev = n
	}
	if out := e.kubectl(t, "logs", "talker", "--tail=2"); strings.Count(out, "\n") != 2 {
		t.Fatalf("logs --tail=2: %q", out)
	}
	// --limit-bytes ends the log after that many bytes, mid-line.
	if out := e.kubectl(t, "logs", "talker", "--limit-bytes=8"); out != "line 0\nl" {
		t.Fatalf("logs --limit-bytes=8: %q", out)
	}
}

func testExec(t *testing.T, e *env) {
	out := e.kubectl(t, "exec", "talker", "--", "sh", "-c", "echo out; echo err >&2")
	if !strings.Contains(out, "out") || !strings.Contains(out, "err") {
		t.Fatalf("exec: %q", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.cmd(ctx, t, "exec", "talker", "--", "sh", "-c", "exit 3").Run(); err == nil || err.(*exec.ExitError).ExitCode() != 3 {
		t.Fatalf("exec exit code: %v", err)
	}
	// Over SPDY, as kubectl before 1.30 speaks it (this kubectl when
	// told not to use WebSockets): stdin in, both outputs and the code out.
	spdy := e.cmd(ctx, t, "exec", "-i", "talker", "--", "sh", "-c", "read l; echo got-$l; echo err >&2; exit 4")
	spdy.Env = append(spdy.Env, "KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false")
	spdy.Stdin = strings.NewReader("hi\n")
	sout, err := spdy.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 4 || !strings.Contains(string(sout), "got-hi") || !strings.Contains(string(sout), "err") {
		t.Fatalf("exec over SPDY: %v\n%s", err, sout)
	}
	// exec -it: a shell on a terminal (script gives kubectl one) that
	// answers what is typed.
	pr, pw := io.Pipe()
	line := fmt.Sprintf("%s --kubeconfig %s exec -it talker -- sh", kubectlPath(t), e.kubeconfig)
	cmd := exec.CommandContext(ctx, "script", "-qfec", line, "/dev/null")
	cmd.Env = append(os.Environ(), "HOME="+e.dir, "TERM=xterm")
	b := &background{}
	cmd.Stdout, cmd.Stderr, cmd.Stdin = b, b, pr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { pw.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// What is typed before kubectl has its stream may be lost, as on a
	// real terminal: type the line again until the shell answers it.
	var typed time.Time
	eventually(t, "the shell's answer", func() error {
		if !strings.Contains(b.String(), "answer-42") || !strings.Contains(b.String(), "on-a-tty") {
			if time.Since(typed) > time.Second {
				fmt.Fprintf(pw, "echo answer-$((40+2)); [ -t 0 ] && echo on-a-tty\n")
				typed = time.Now()
			}
			return fmt.Errorf("terminal so far: %q", b.String())
		}
		return nil
	})
	fmt.Fprintf(pw, "exit\n")
}

func testCp(t *testing.T, e *env) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.txt")
	want := "copied through tar over exec\n" + strings.Repeat("x", 100000) + "\n"
	if err := os.WriteFile(src, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	e.kubectl(t, "cp", src, "default/talker:/tmp/in.txt")
	if out := e.kubectl(t, "exec", "talker", "--", "wc", "-c", "/tmp/in.txt"); !strings.Contains(out, fmt.Sprint(len(want))) {
		t.Fatalf("the file in the pod: %q", out)
	}
	back := filepath.Join(dir, "back.txt")
	e.kubectl(t, "cp", "default/talker:/tmp/in.txt", back)
	if got, err := os.ReadFile(back); err != nil || string(got) != want {
		t.Fatalf("cp back: %d bytes, %v", len(got), err)
	}
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 80`)

func testPortForward(t *testing.T, e *env) {
	e.kubectl(t, "run", "web", "--image="+images.EchoRef, "--image-pull-policy=IfNotPresent", "--restart=Never", "--port=80")
	e.kubectl(t, "wait", "--for=condition=Ready", "pod/web", "--timeout=90s")
	b := e.background(t, nil, "port-forward", "pod/web", ":80")
	var port string
	eventually(t, "the forwarding line", func() error {
		m := forwardingRE.FindStringSubmatch(b.String())
		if m == nil {
			return fmt.Errorf("output so far: %q", b.String())
		}
		port = m[1]
		return nil
	})
	for i := 0; i < 3; i++ { // one stream per connection, several in a row
		resp, err := http.Get("http://127.0.0.1:" + port + "/")
		if err != nil {
			t.Fatalf("GET through port-forward: %v\n%s", err, b.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "pod=") {
			t.Fatalf("GET through port-forward: %d %q", resp.StatusCode, body)
		}
	}
}

// testTop: kubectl top reads the resource metrics API, which the
// apiserver computes from the kubelets' stats.
func testTop(t *testing.T, e *env) {
	eventually(t, "node metrics", func() error {
		out, err := e.cmd(context.Background(), t, "top", "node").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "CPU(cores)") || !strings.Contains(string(out), "node1") || !strings.Contains(string(out), "node2") {
			return fmt.Errorf("top node: %v\n%s", err, out)
		}
		return nil
	})
	out := e.kubectl(t, "top", "pod", "talker", "--containers")
	if !strings.Contains(out, "talker") || !strings.Contains(out, "MEMORY(bytes)") {
		t.Fatalf("top pod: %s", out)
	}
}

func testDrain(t *testing.T, e *env) {
	e.kubectl(t, "create", "deployment", "moved", "--image="+images.BusyboxRef, "--replicas=2", "--", "sleep", "3600")
	e.kubectl(t, "rollout", "status", "deploy/moved", "--timeout=90s")
	out := e.kubectl(t, "drain", "node1", "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--grace-period=1", "--timeout=90s")
	if !strings.Contains(out, "node/node1 drained") {
		t.Fatalf("drain: %s", out)
	}
	n, err := client.For[*v1.Node](e.c.Client).Get(context.Background(), "", "node1")
	if err != nil || !n.Spec.Unschedulable {
		t.Fatalf("node1 not cordoned: %v %v", n.GetSpec(), err)
	}
	eventually(t, "no pods left on node1 and the deployment's pods on node2", func() error {
		pods, _, err := client.For[*v1.Pod](e.c.Client).List(context.Background(), client.ListOptions{Namespace: "default"})
		if err != nil {
			return err
		}
		onNode2 := 0
		for _, p := range pods {
			if p.Spec.NodeName == "node1" {
				return fmt.Errorf("pod %s still on node1", p.Metadata.Name)
			}
			if strings.HasPrefix(p.Metadata.Name, "moved-") && p.Spec.NodeName == "node2" && p.GetStatus().GetPhase() == "Running" {
				onNode2++
			}
		}
		if onNode2 != 2 {
			return fmt.Errorf("%d of the deployment's pods run on node2", onNode2)
		}
		return nil
	})
	e.kubectl(t, "uncordon", "node1")
}
