package pod

import (
	"testing"
)

// TestEvict: an evicted pod's containers are stopped, its sandbox is
// released, and it stays Failed with reason Evicted and the message; an
// Evicted event is recorded; restarts do not bring it back.
func TestEvict(t *testing.T) {
	e := newTestEnv(t)
	w := e.worker(newPod("hog", "app"))
	e.sync(w)
	if w.status.Phase != PhaseRunning {
		t.Fatalf("phase %s, want Running", w.status.Phase)
	}
	if e.m.Evict("no-such-uid", "x") {
		t.Error("Evict of an unknown pod reported true")
	}
	const msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."
	if !e.m.Evict(w.uid, msg) {
		t.Fatal("Evict reported no worker")
	}
	e.sync(w)
	s := w.status
	if s.Phase != PhaseFailed || s.Reason != ReasonEvicted || s.Message != msg {
		t.Fatalf("status phase=%s reason=%s message=%q, want Failed/Evicted", s.Phase, s.Reason, s.Message)
	}
	if len(e.rt.running()) != 0 {
		t.Errorf("containers still running: %v", e.rt.running())
	}
	if !e.rec.has(ReasonEvicted) || !e.rec.has("Killing") {
		t.Errorf("events %v, want Evicted and Killing", e.rec.events)
	}
	if !w.released {
		t.Error("the evicted pod's sandbox was not released")
	}
	// Later syncs keep it Failed/Evicted (the reason survives the
	// terminal status rebuild), with its containers stopped.
	e.sync(w)
	e.sync(w)
	if s := w.status; s.Phase != PhaseFailed || s.Reason != ReasonEvicted || len(e.rt.running()) != 0 {
		t.Errorf("after resyncs: phase=%s reason=%s running=%v", s.Phase, s.Reason, e.rt.running())
	}
}
