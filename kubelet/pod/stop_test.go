package pod

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tugboat/tugboat/kubelet/runtime"
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

// TestActiveDeadline: a pod with spec.activeDeadlineSeconds is woken at
// its deadline (counted from status.startTime) and then fails for good
// with reason DeadlineExceeded, its containers stopped and its sandbox
// released.
func TestActiveDeadline(t *testing.T) {
	e := newTestEnv(t)
	pod := newPod("job", "app")
	d := int64(30)
	pod.Spec.ActiveDeadlineSeconds = &d
	w := e.worker(pod)
	if r := e.sync(w); r.after > 30*time.Second {
		t.Errorf("the first sync's next sync is in %s, want at the deadline (≤ 30 s)", r.after)
	}
	if w.status.Phase != PhaseRunning || w.status.StartTime == nil {
		t.Fatalf("phase %s startTime %v, want Running with a start time", w.status.Phase, w.status.StartTime)
	}
	e.advance(10 * time.Second)
	if r := e.sync(w); r.after > 20*time.Second || r.done {
		t.Errorf("10 s in, the next sync is in %s, want at the deadline (≤ 20 s)", r.after)
	}
	if w.status.Phase != PhaseRunning {
		t.Fatalf("failed before the deadline: %s %s", w.status.Phase, w.status.Reason)
	}
	e.advance(20 * time.Second)
	e.sync(w)
	s := w.status
	if s.Phase != PhaseFailed || s.Reason != ReasonDeadlineExceeded || s.Message != MessageDeadlineExceeded {
		t.Fatalf("status phase=%s reason=%s message=%q, want Failed/DeadlineExceeded", s.Phase, s.Reason, s.Message)
	}
	if len(e.rt.running()) != 0 {
		t.Errorf("containers still running: %v", e.rt.running())
	}
	if !e.rec.has(ReasonDeadlineExceeded) || !w.released {
		t.Errorf("events %v, released %v: want a DeadlineExceeded event and the sandbox released", e.rec.events, w.released)
	}
	e.sync(w)
	if s := w.status; s.Phase != PhaseFailed || s.Reason != ReasonDeadlineExceeded {
		t.Errorf("after a resync: phase=%s reason=%s", s.Phase, s.Reason)
	}
}

// TestHostNetwork: a hostNetwork pod runs in the node's network namespace:
// no netns, no CNI, the node's IP as pod IP, a network plugin that is not
// ready does not hold it back, and deleting it gives nothing back to CNI.
func TestHostNetwork(t *testing.T) {
	e := newTestEnv(t)
	e.net.readyErr = errors.New("no CNI network config")
	pod := newPod("hostnet", "app")
	pod.Spec.HostNetwork = true
	w := e.worker(pod)
	e.sync(w)
	if w.status.Phase != PhaseRunning || w.status.PodIp != e.m.cfg.NodeIP.String() {
		t.Fatalf("phase %s podIP %s, want Running with the node's IP %s", w.status.Phase, w.status.PodIp, e.m.cfg.NodeIP)
	}
	if len(e.net.netns) != 0 || len(e.net.up) != 0 {
		t.Errorf("netns %v, CNI ADDs %v: want none", e.net.netns, e.net.up)
	}
	sbs, _ := e.rt.ListPodSandbox(context.Background(), runtime.SandboxFilter{PodUID: w.uid})
	if len(sbs) != 1 || !sbs[0].Config.HostNetwork || sbs[0].Config.NetNSPath != "" || sbs[0].Config.Hostname != e.m.cfg.NodeName {
		t.Fatalf("sandboxes %+v, want one host-network sandbox with the node's name as hostname", sbs)
	}
	// A resync keeps the same sandbox and container.
	run := e.rt.running()
	e.advance(time.Second)
	e.sync(w)
	if again := e.rt.running(); len(again) != 1 || again[0].ID != run[0].ID {
		t.Errorf("containers after a resync: %v, before %v", again, run)
	}
	dns, err := e.m.dnsConfig(pod)
	if err != nil {
		t.Fatal(err)
	}
	if len(dns.Servers) > 0 && len(e.m.cfg.ClusterDNS) > 0 && dns.Servers[0] == e.m.cfg.ClusterDNS[0].String() {
		t.Errorf("hostNetwork pod with dnsPolicy ClusterFirst got the cluster DNS %v; Kubernetes gives it the node's resolv.conf", dns)
	}
	pod.Spec.DnsPolicy = "ClusterFirstWithHostNet"
	if dns, _ := e.m.dnsConfig(pod); len(e.m.cfg.ClusterDNS) > 0 && (len(dns.Servers) == 0 || dns.Servers[0] != e.m.cfg.ClusterDNS[0].String()) {
		t.Errorf("ClusterFirstWithHostNet: %v, want the cluster DNS", dns)
	}
	w.markDeleted(pod)
	e.sync(w)
	if len(e.net.dels) != 0 {
		t.Errorf("CNI DELs %v for a host-network pod", e.net.dels)
	}
}
