package containerdtest

import (
	"context"
	"testing"

	"github.com/tugboat/tugboat/kubelet/runtime/containerd/daemon"
)

func TestStartStop(t *testing.T) {
	c := New(t)
	cl, err := c.Client("tugboat-test")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	v, err := cl.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("containerd %s (pid %d, %s)", v.Version, c.PID, c.Address)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Ping(context.Background(), c.Address); err == nil {
		t.Fatal("containerd still answers after Stop")
	}
}
