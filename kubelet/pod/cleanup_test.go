package pod

import (
	"context"
	"os"
	"testing"
)

// TestRemoveAllTearsDownEveryPod: with the pods still running, RemoveAll
// (a fresh manager over the same runtime, network and root dir, as
// `kubelet --cleanup` makes one) leaves no sandbox, container, network,
// netns pin or pod directory.
func TestRemoveAllTearsDownEveryPod(t *testing.T) {
	e := newTestEnv(t)
	for _, name := range []string{"one", "two"} {
		e.sync(e.worker(newPod(name, "app")))
	}
	if len(e.rt.sandboxes) != 2 || len(e.net.up) != 2 {
		t.Fatalf("setup: sandboxes %v up %v", e.rt.sandboxes, e.net.up)
	}
	if err := RemoveAll(context.Background(), e.m.cfg, e.rt, e.net); err != nil {
		t.Fatal(err)
	}
	if len(e.rt.sandboxes) != 0 || len(e.rt.containers) != 0 || len(e.net.up) != 0 || len(e.net.netns) != 0 || len(e.net.dels) != 2 {
		t.Fatalf("left: sandboxes %v containers %v up %v netns %v dels %v", e.rt.sandboxes, e.rt.containers, e.net.up, e.net.netns, e.net.dels)
	}
	if entries, err := os.ReadDir(e.m.cfg.PodsDir()); err == nil && len(entries) > 0 {
		t.Errorf("pod directories left: %v", entries)
	}
}
