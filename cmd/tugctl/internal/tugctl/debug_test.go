package tugctl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// TestDebug: tugctl debug adds an ephemeral container through
// pods/ephemeralcontainers (on a real apiserver), waits for the node to
// report it running, and attaches to it; without -i it only adds one;
// describe lists them.
func TestDebug(t *testing.T) {
	e := newEnv(t)
	n := e.startFakeNode("n1")
	n.set(func(n *fakeNode) {
		n.process = func(st *v1.ExecStart, stdin string) (string, bool, int32) { return "debug shell\n", false, 0 }
	})
	boundPod(t, e, "web", "n1", "Running", nil)

	b := e.start("debug", "web", "--image=busybox:1", "--target=c", "-c", "dbg", "-i")
	// The node's part: the container runs once it is in the spec.
	wait.Eventually(t, 30*time.Second, "the ephemeral container in the spec", func() error {
		p, err := client.For[*v1.Pod](e.c).Get(context.Background(), "default", "web")
		if err != nil {
			return err
		}
		ec := p.GetSpec().GetEphemeralContainers()
		if len(ec) != 1 {
			return errors.New("not yet")
		}
		if ec[0].Name != "dbg" || ec[0].TargetContainerName != "c" || !ec[0].Stdin || ec[0].Image != "busybox:1" {
			return wait.Stop(errors.New("ephemeral container " + ec[0].String()))
		}
		return nil
	})
	setPodStatus(t, e.c, "web", &v1.PodStatus{Phase: "Running", Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}},
		EphemeralContainerStatuses: []*v1.ContainerStatus{{Name: "dbg", ContainerId: "containerd://d1",
			State: &v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}})
	wait.Eventually(t, 30*time.Second, "the debug container's output", outputIs(b.out, "debug shell\n"))
	b.cancel()
	b.wait(t, 10*time.Second)
	if got := b.err.String(); !strings.Contains(got, `Targeting container "c".`) {
		t.Errorf("debug stderr: %q", got)
	}
	n.mu.Lock()
	attaches := strings.Join(n.attaches, " ")
	n.mu.Unlock()
	if attaches != "default/web/dbg stdin=true tty=false" {
		t.Errorf("attaches the node got: %s", attaches)
	}

	// Not attached: added, named by tugctl, with the command after --.
	r := e.run("debug", "web", "--image=busybox:1", "--", "sleep", "3600")
	if r.code != 0 || !strings.Contains(r.err, "Defaulting debug container name to debugger-") {
		t.Fatalf("debug without -i: %v", r)
	}
	p, err := client.For[*v1.Pod](e.c).Get(context.Background(), "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	ec := p.GetSpec().GetEphemeralContainers()
	if len(ec) != 2 || !strings.HasPrefix(ec[1].Name, "debugger-") || strings.Join(ec[1].Command, " ") != "sleep 3600" || ec[1].Stdin {
		t.Fatalf("ephemeral containers: %v", ec)
	}
	out := e.run("describe", "pod", "web")
	for _, want := range []string{"Ephemeral Containers:", "  dbg:", "Target Container Name:  c", ec[1].Name + ":"} {
		if !strings.Contains(out.out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out.out)
		}
	}

	mustFail(t, e.run("debug", "web"), "--image is required")
	mustFail(t, e.run("debug", "web", "--image=busybox:1", "-c", "dbg"), `pod web already has a container named "dbg"`)
	mustFail(t, e.run("debug", "web", "--image=busybox:1", "-c", "c"), `pod web already has a container named "c"`)
	mustFail(t, e.run("debug", "web", "--image=busybox:1", "--target=nope"), `targetContainerName: Not found: "nope"`)
	mustFail(t, e.run("debug", "nosuch", "--image=busybox:1"), `pods "nosuch" not found`)
}
