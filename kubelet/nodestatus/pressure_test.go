package nodestatus

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

type fakePressure struct {
	mu         sync.Mutex
	mem, disk  bool
	memMsg, dm string
}

func (f *fakePressure) MemoryPressure() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mem, f.memMsg
}
func (f *fakePressure) DiskPressure() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.disk, f.dm
}

// TestPressureConditions: MemoryPressure and DiskPressure follow the
// Pressure source (the eviction thresholds), with its message.
func TestPressureConditions(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &fakePressure{}
	a, err := New(Config{NodeName: "n1", NodeIP: netip.MustParseAddr("10.123.0.11"), PodCIDR: "10.244.7.0/24",
		LeaseInterval: 100 * time.Millisecond, StatusInterval: 100 * time.Millisecond, Pressure: p},
		s.Client, &fakeRuntime{}, (&netState{}).check)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	cond := func(typ string) *v1.Condition {
		n, err := client.For[*v1.Node](s.Client).Get(ctx, "", "n1")
		if err != nil {
			return nil
		}
		for _, c := range n.GetStatus().GetConditions() {
			if c.Type == typ {
				return c
			}
		}
		return nil
	}
	waitFor(t, "no pressure", func() bool {
		c := cond("DiskPressure")
		return c != nil && c.Status == "False" && c.Reason == "KubeletHasNoDiskPressure"
	})
	p.mu.Lock()
	p.disk, p.dm = true, "nodefs.available 5Gi < 10Gi (nodefs.available<10%) on the file system of /var/lib/tugboat"
	p.mu.Unlock()
	waitFor(t, "DiskPressure", func() bool {
		c := cond("DiskPressure")
		return c != nil && c.Status == "True" && c.Reason == "KubeletHasDiskPressure" &&
			c.Message == "kubelet has disk pressure: nodefs.available 5Gi < 10Gi (nodefs.available<10%) on the file system of /var/lib/tugboat"
	})
	if c := cond("MemoryPressure"); c.GetStatus() != "False" {
		t.Errorf("MemoryPressure %v", c)
	}
	p.mu.Lock()
	p.mem, p.memMsg = true, "memory.available 50Mi < 100Mi (memory.available<100Mi)"
	p.mu.Unlock()
	waitFor(t, "MemoryPressure", func() bool {
		c := cond("MemoryPressure")
		return c != nil && c.Status == "True" && c.Reason == "KubeletHasInsufficientMemory"
	})
}
