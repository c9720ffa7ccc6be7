package kubectl_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/kubeapi/kubectltest"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// TestDebug adds ephemeral containers to a running pod on a real kubelet:
// the real `kubectl debug -it --target` gives a shell on a terminal that
// sees the target container's processes and returns on exit, then
// `tugctl debug -i --target` the same without a terminal; each one ends
// terminated in the pod's status with its shell's exit code and is never
// started again. The native backend cannot attach (the kubelet refuses it
// and says to use exec), so there the debugging containers run a command
// without -i and their logs show what they saw.
func TestDebug(t *testing.T) {
	kubectlPath(t)
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Nodes: 1, Images: []string{"busybox"}})
	e := &env{c: c, dir: t.TempDir()}
	pki := c.PKIDir()
	e.kubeconfig = filepath.Join(e.dir, "kubeconfig")
	kubectltest.Kubeconfig(t, e.kubeconfig, c.KubeServer, filepath.Join(pki, "ca.crt"), "admin",
		fmt.Sprintf("client-certificate: %s\nclient-key: %s", filepath.Join(pki, "admin.crt"), filepath.Join(pki, "admin.key")))
	if err := c.WaitNodesReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The target's process is one no debugging shell runs: ps shows it
	// only from inside the target's PID namespace.
	e.kubectl(t, "run", "target", "--image="+images.BusyboxRef, "--image-pull-policy=IfNotPresent", "--restart=Never",
		"--overrides", `{"spec":{"nodeName":"node1","terminationGracePeriodSeconds":1,"containers":[{"name":"app","image":"`+images.BusyboxRef+`","imagePullPolicy":"IfNotPresent","command":["sleep","86421"]}]}}`)
	e.kubectl(t, "wait", "--for=condition=Ready", "pod/target", "--timeout=120s")

	if c.Runtime == cluster.RuntimeContainerd {
		testDebugNoAttach(t, e)
		return
	}
	kubectlID := testKubectlDebug(t, e)
	tugctlID := testTugctlDebug(t, e)

	// Neither was started again: after both sessions the kubelet has
	// synced the pod many times (the second container started, ran and
	// ended after the first ended), and each still has its first
	// container, restartCount 0.
	p := getPod(t, e, "target")
	for name, id := range map[string]string{"dbg-kubectl": kubectlID, "dbg-tugctl": tugctlID} {
		st := ephemeralStatus(p, name)
		if st.GetContainerId() != id || st.GetRestartCount() != 0 || st.GetState().GetTerminated() == nil {
			t.Errorf("ephemeral container %s after both sessions: %v; want still the terminated %s, restartCount 0", name, st, id)
		}
	}
	if rc := p.GetStatus().GetContainerStatuses()[0].GetRestartCount(); rc != 0 {
		t.Errorf("the target container restarted %d times", rc)
	}
}

// testKubectlDebug: kubectl debug -it on a terminal (script gives kubectl
// one). It returns the container's id in the pod's status once it has
// terminated with exit code 3.
func testKubectlDebug(t *testing.T, e *env) string {
	line := fmt.Sprintf("%s --kubeconfig %s debug -it target --image=%s --image-pull-policy=IfNotPresent --target=app -c dbg-kubectl -- sh",
		kubectlPath(t), e.kubeconfig, images.BusyboxRef)
	s := startSession(t, e.dir, "script", "-qfec", line, "/dev/null")
	// What is typed before kubectl has attached is lost, as on a real
	// terminal: type the line again until the shell answers it.
	s.typeUntil(t, "ps\n", "ps on the terminal showing the target's process", func(out string) bool {
		return strings.Contains(out, "sleep 86421") && strings.Contains(out, "PID")
	})
	s.typeUntil(t, "echo answer-$((40+2)); [ -t 0 ] && echo on-a-tty\n", "the shell on a terminal", func(out string) bool {
		return strings.Contains(out, "answer-42") && strings.Contains(out, "on-a-tty")
	})
	// The shell exits 3; kubectl exits 0, as against Kubernetes, whose
	// attach stream ends in Success whatever the code (the code is in the
	// container's status).
	s.write(t, "exit 3\n")
	if err := s.wait(t); err != nil {
		t.Fatalf("kubectl debug -it after exit 3: %v, want exit status 0\n%s", err, s.out.String())
	}
	t.Logf("kubectl debug -it session:\n%s", s.out.String())
	return waitTerminated(t, e, "dbg-kubectl", 3)
}

// testTugctlDebug: tugctl debug -i with stdin a pipe: no terminal, the
// shell reads its commands from it; tugctl returns when the shell exits,
// while its own stdin is still open.
func testTugctlDebug(t *testing.T, e *env) string {
	args := append(e.c.ClientArgs("admin"), "debug", "-i", "target", "--image="+images.BusyboxRef,
		"--image-pull-policy=IfNotPresent", "--target=app", "-c", "dbg-tugctl", "--", "sh")
	s := startSession(t, e.dir, tugctl, args...)
	// Input waits in the pipe until tugctl has attached, so it is typed
	// once; typeUntil types again only if the shell has not answered.
	s.typeUntil(t, "ps; echo ps-$((40+2))\n", "ps through tugctl showing the target's process", func(out string) bool {
		return strings.Contains(out, "sleep 86421") && strings.Contains(out, "ps-42")
	})
	s.write(t, "exit 3\n")
	if err := s.wait(t); err != nil {
		t.Fatalf("tugctl debug -i after exit: %v\n%s", err, s.out.String())
	}
	t.Logf("tugctl debug -i session:\n%s", s.out.String())
	return waitTerminated(t, e, "dbg-tugctl", 3)
}

// testDebugNoAttach is TestDebug on the native backend: kubectl and
// tugctl debug without -i, a command each; its log shows the target's
// process and the container terminates, never restarted.
func testDebugNoAttach(t *testing.T, e *env) {
	e.kubectl(t, "debug", "target", "--image="+images.BusyboxRef, "--image-pull-policy=IfNotPresent", "--target=app", "-c", "dbg-kubectl", "--", "ps")
	s := startSession(t, e.dir, tugctl, append(e.c.ClientArgs("admin"), "debug", "target", "--image="+images.BusyboxRef,
		"--image-pull-policy=IfNotPresent", "--target=app", "-c", "dbg-tugctl", "--", "sh", "-c", "ps; exit 3")...)
	if err := s.wait(t); err != nil {
		t.Fatalf("tugctl debug: %v\n%s", err, s.out.String())
	}
	ids := map[string]string{"dbg-kubectl": waitTerminated(t, e, "dbg-kubectl", 0), "dbg-tugctl": waitTerminated(t, e, "dbg-tugctl", 3)}
	for name := range ids {
		if out := e.kubectl(t, "logs", "target", "-c", name); !strings.Contains(out, "sleep 86421") {
			t.Errorf("ps in %s does not show the target's process: %q", name, out)
		}
	}
	p := getPod(t, e, "target")
	for name, id := range ids {
		if st := ephemeralStatus(p, name); st.GetContainerId() != id || st.GetRestartCount() != 0 {
			t.Errorf("ephemeral container %s later: %v; want still %s, restartCount 0", name, st, id)
		}
	}
}

// session is a command whose stdin the test writes through a pipe.
type session struct {
	cmd  *exec.Cmd
	in   *os.File
	out  *cluster.Output
	done chan error
}

// startSession starts name with args, stdin a pipe (an *os.File, so
// Wait does not wait for a copy of it) and the output collected; the
// test's end kills what is left.
func startSession(t *testing.T, home, name string, args ...string) *session {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "TERM=xterm", "TUGBOAT_CONFIG=", "KUBECONFIG=")
	s := &session{cmd: cmd, in: w, out: &cluster.Output{}, done: make(chan error, 1)}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = r, s.out, s.out
	// A child that outlives the command (none should) must not keep
	// Wait copying its output forever.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		w.Close()
		<-s.done
	})
	return s
}

func (s *session) write(t *testing.T, text string) {
	t.Helper()
	if _, err := s.in.WriteString(text); err != nil {
		t.Fatalf("typing %q: %v\n%s", text, err, s.out.String())
	}
}

// typeUntil types text, and again every 5 s while the output does not
// satisfy ok, for up to 3 minutes; the command must not end meanwhile.
func (s *session) typeUntil(t *testing.T, text, what string, ok func(string) bool) {
	t.Helper()
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var typed time.Time
	for !ok(s.out.String()) {
		if time.Since(typed) > 5*time.Second {
			s.write(t, text)
			typed = time.Now()
		}
		select {
		case err := <-s.done:
			s.done <- err
			t.Fatalf("waiting for %s: the command ended (%v)\n%s", what, err, s.out.String())
		case <-deadline:
			t.Fatalf("waiting for %s: 3 minutes\n%s", what, s.out.String())
		case <-tick.C:
		}
	}
}

// wait waits up to 3 minutes for the command to end, with the shell's
// input still open.
func (s *session) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(3 * time.Minute):
		t.Fatalf("the command did not return within 3 minutes\n%s", s.out.String())
		return nil
	}
}

func getPod(t *testing.T, e *env, name string) *v1.Pod {
	t.Helper()
	p, err := client.For[*v1.Pod](e.c.Client).Get(context.Background(), "default", name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ephemeralStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, st := range p.GetStatus().GetEphemeralContainerStatuses() {
		if st.Name == name {
			return st
		}
	}
	return nil
}

// waitTerminated waits until the pod's status shows ephemeral container
// name terminated with code, and returns its container id.
func waitTerminated(t *testing.T, e *env, name string, code int32) string {
	t.Helper()
	var id string
	eventually(t, "ephemeral container "+name+" terminated in the pod's status", func() error {
		st := ephemeralStatus(getPod(t, e, "target"), name)
		term := st.GetState().GetTerminated()
		if term == nil {
			return fmt.Errorf("status %v", st)
		}
		if term.ExitCode != code {
			t.Fatalf("ephemeral container %s terminated with %d, want %d: %v", name, term.ExitCode, code, st)
		}
		id = st.GetContainerId()
		return nil
	})
	return id
}
