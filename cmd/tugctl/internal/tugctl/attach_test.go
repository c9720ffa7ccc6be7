package tugctl

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// fakeKubelet does the scheduler's and the kubelet's part for the pods
// tugctl run makes: it binds each new pod of the default namespace to
// node and reports it Running and Ready, or with start Succeeded. It
// keeps the containers it saw, by pod name.
type fakeKubelet struct {
	mu    sync.Mutex
	specs map[string]*v1.Container
	done  map[string]bool // pods that complete at once
}

func (e *env) startFakeKubelet(node string) *fakeKubelet {
	k := &fakeKubelet{specs: map[string]*v1.Container{}, done: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	e.t.Cleanup(func() { cancel(); <-stopped })
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			pods, _, _ := client.For[*v1.Pod](e.c).List(ctx, client.ListOptions{Namespace: "default"})
			for _, p := range pods {
				if p.Spec.NodeName != "" || p.Metadata.DeletionTimestamp != nil {
					continue
				}
				k.mu.Lock()
				k.specs[p.Metadata.Name] = p.Spec.Containers[0]
				phase := "Running"
				if k.done[p.Metadata.Name] {
					phase = "Succeeded"
				}
				k.mu.Unlock()
				if _, err := e.c.Bind(ctx, "default", p.Metadata.Name, node, 0); err != nil {
					continue
				}
				_, _ = client.For[*v1.Pod](e.c).Mutate(ctx, "default", p.Metadata.Name, true, func(p *v1.Pod) error {
					p.Status = &v1.PodStatus{Phase: phase, Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}}
					return nil
				})
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return k
}

func (k *fakeKubelet) spec(name string) *v1.Container {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.specs[name]
}

// finish reports pod name terminated with code, as the kubelet would once
// its process exited.
func (e *env) finish(t *testing.T, name string, code int32) {
	phase := "Succeeded"
	if code != 0 {
		phase = "Failed"
	}
	_, err := client.For[*v1.Pod](e.c).Mutate(context.Background(), "default", name, true, func(p *v1.Pod) error {
		p.Status = &v1.PodStatus{Phase: phase, ContainerStatuses: []*v1.ContainerStatus{{Name: name,
			State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: "Error"}}}}}
		return nil
	})
	if err != nil {
		t.Errorf("finishing %s: %v", name, err)
	}
}

func TestRunAttached(t *testing.T) {
	e := newEnv(t)
	n := e.startFakeNode("n1")
	k := e.startFakeKubelet("n1")
	// The process upper-cases its stdin and exits 3 at its end; one
	// without stdin says hello and exits 0.
	n.set(func(n *fakeNode) {
		n.process = func(st *v1.ExecStart, stdin string) (string, bool, int32) {
			if !st.Stdin {
				e.finish(t, st.Pod, 0)
				return "hello from " + st.Pod + "\n", true, 0
			}
			e.finish(t, st.Pod, 3)
			return strings.ToUpper(stdin), true, 3
		}
	})

	// -i --rm --restart=Never: stdin in, output out, the container's exit
	// status is tugctl's, the pod is gone at the end.
	r := e.runIn("hello\n", "run", "-i", "--rm", "upper", "--image=busybox", "--restart=Never", "--", "tr", "a-z", "A-Z")
	if r.code != 3 || r.out != "HELLO\npod \"upper\" deleted\n" || !strings.Contains(r.err, "pod default/upper terminated (Error)") {
		t.Errorf("run -i --rm: %v", r)
	}
	if c := k.spec("upper"); c == nil || !c.Stdin || !c.StdinOnce || c.Tty || strings.Join(c.Args, " ") != "tr a-z A-Z" {
		t.Errorf("the pod's container: %v", c)
	}
	if _, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", "upper"); !apierrors.IsNotFound(err) {
		t.Errorf("after --rm the pod is still there: %v", err)
	}

	// -it without a terminal: a warning, the container's terminal is
	// still the session's; --leave-stdin-open keeps stdinOnce off and
	// does not wait for the pod to finish.
	r = e.runIn("x", "run", "-it", "--leave-stdin-open", "shell", "--image=busybox", "--restart=Never")
	if r.code != 0 || r.out != "X" || !strings.Contains(r.err, "Unable to use a TTY - input is not a terminal") {
		t.Errorf("run -it: %v", r)
	}
	if c := k.spec("shell"); c == nil || !c.Stdin || c.StdinOnce || !c.Tty {
		t.Errorf("run -it container: %v", c)
	}

	// --attach without -i: output only; a pod that completed before
	// tugctl could attach has its log printed instead.
	r = mustOK(t, e.run("run", "--attach", "hi", "--image=busybox", "--restart=Never"))
	if r.out != "hello from hi\n" {
		t.Errorf("run --attach: %v", r)
	}
	k.mu.Lock()
	k.done["quick"] = true
	k.mu.Unlock()
	r = mustOK(t, e.run("run", "--attach", "--rm", "quick", "--image=busybox", "--restart=Never"))
	if r.out != "n1/quick line 1\nn1/quick line 2\nn1/quick line 3\npod \"quick\" deleted\n" {
		t.Errorf("run --attach of a completed pod: %v", r)
	}
	n.mu.Lock()
	got := strings.Join(n.attaches, " ")
	n.mu.Unlock()
	if got != "default/upper/upper stdin=true tty=false default/shell/shell stdin=true tty=true default/hi/hi stdin=false tty=false" {
		t.Errorf("attaches the node got: %s", got)
	}

	// Refused combinations create nothing.
	mustFail(t, e.run("run", "-t", "a", "--image=busybox"), "-i/--stdin is required for containers with -t/--tty=true")
	mustFail(t, e.run("run", "--rm", "a", "--image=busybox"), "--rm should only be used for attached containers")
	mustFail(t, e.run("run", "-i", "--dry-run=client", "a", "--image=busybox"), "--dry-run=[server|client] can't be used with attached containers")
	mustFail(t, e.run("run", "-i", "a", "--image=busybox", "--pod-running-timeout=0s"), "--pod-running-timeout 0s: must be positive")
	if _, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", "a"); !apierrors.IsNotFound(err) {
		t.Errorf("a refused run made pod a: %v", err)
	}
}

func TestAttach(t *testing.T) {
	e := newEnv(t)
	n := e.startFakeNode("n1")
	n.set(func(n *fakeNode) {
		n.process = func(st *v1.ExecStart, stdin string) (string, bool, int32) {
			if st.Pod == "quits" {
				return "bye\n", true, 3 // it writes, and exits 3
			}
			return "serving\n", false, 0 // a server: it writes, and goes on
		}
	})
	boundPod(t, e, "web", "n1", "Running", nil)
	boundPod(t, e, "quits", "n1", "Running", nil)
	boundPod(t, e, "done", "n1", "Succeeded", nil)
	two := testPod("two", nil)
	two.Spec.Containers = append(two.Spec.Containers, &v1.Container{Name: "side", Image: "busybox:1"})
	mustCreate(t, e.c, two)
	if _, err := e.c.Bind(ctxT(t), "default", "two", "n1", 0); err != nil {
		t.Fatal(err)
	}
	setPodStatus(t, e.c, "two", &v1.PodStatus{Phase: "Running", Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}})

	// The process's output until ^C, which leaves it running.
	b := e.start("attach", "web")
	wait.Eventually(t, 10*time.Second, "the output", outputIs(b.out, "serving\n"))
	b.cancel()
	if code := b.wait(t, 10*time.Second); code != 130 {
		t.Errorf("interrupted attach: exit %d, stderr %q", code, b.err.String())
	}
	// Several containers: the first, said so; -t on a container without
	// a terminal is dropped with kubectl's words.
	b = e.start("attach", "-t", "two")
	wait.Eventually(t, 10*time.Second, "the output", outputIs(b.out, "serving\n"))
	b.cancel()
	b.wait(t, 10*time.Second)
	if got := b.err.String(); !strings.Contains(got, `Defaulted container "c" out of: c, side`) || !strings.Contains(got, "error: Unable to use a TTY - container c did not allocate one") {
		t.Errorf("attach -t two: stderr %q", got)
	}
	b = e.start("attach", "-q", "-c", "side", "two")
	wait.Eventually(t, 10*time.Second, "the output", outputIs(b.out, "serving\n"))
	b.cancel()
	b.wait(t, 10*time.Second)
	n.mu.Lock()
	got := strings.Join(n.attaches, " ")
	n.mu.Unlock()
	if got != "default/web/c stdin=false tty=false default/two/c stdin=false tty=false default/two/side stdin=false tty=false" {
		t.Errorf("attaches the node got: %s", got)
	}

	// The process's exit code is not tugctl's: as kubectl against
	// Kubernetes (whose attach stream always ends in Success), the
	// session ends with 0 and the code is in the container's status.
	if r := mustOK(t, e.run("attach", "quits")); r.out != "bye\n" {
		t.Errorf("attach to a process that exits 3: stdout %q", r.out)
	}
	mustFail(t, e.run("attach", "done"), "cannot attach a container in a completed pod; current phase is Succeeded")
	mustFail(t, e.run("attach", "-c", "nope", "web"), "container nope not found in pod web")
	mustFail(t, e.run("attach", "gone"), `pods "gone" not found`)
	mustCreate(t, e.c, testPod("pending", nil))
	mustFail(t, e.run("attach", "pending", "--pod-running-timeout=2s"), "timed out waiting for pod pending to be running (Pending, --pod-running-timeout 2s)")
}
