package nodestatus

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

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
	waitCondition(t, s.Client, "n1", "DiskPressure", "False", "KubeletHasNoDiskPressure")
	p.mu.Lock()
	p.disk, p.dm = true, "nodefs.available 5Gi < 10Gi (nodefs.available<10%) on the file system of /var/lib/tugboat"
	p.mu.Unlock()
	waitCondition(t, s.Client, "n1", "DiskPressure", "True", "KubeletHasDiskPressure",
		"kubelet has disk pressure: nodefs.available 5Gi < 10Gi (nodefs.available<10%) on the file system of /var/lib/tugboat")
	if c, err := readCondition(s.Client, "n1", "MemoryPressure"); err != nil || c.GetStatus() != "False" {
		t.Errorf("MemoryPressure %v, %v", c, err)
	}
	p.mu.Lock()
	p.mem, p.memMsg = true, "memory.available 50Mi < 100Mi (memory.available<100Mi)"
	p.mu.Unlock()
	waitCondition(t, s.Client, "n1", "MemoryPressure", "True", "KubeletHasInsufficientMemory")
}
