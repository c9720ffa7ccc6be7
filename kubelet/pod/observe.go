package pod

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// podState is what the runtime has for the pod.
type podState struct {
	sandboxes  []runtime.SandboxStatus
	containers []runtime.ContainerStatus
}

// observe lists the pod's sandboxes and containers (by its UID label).
func (w *worker) observe(ctx context.Context) (*podState, error) {
	sbs, err := w.m.rt.ListPodSandbox(ctx, runtime.SandboxFilter{PodUID: w.uid})
	if err != nil {
		return nil, err
	}
	if len(sbs) == 0 {
		// No sandbox, no containers (a container whose sandbox is gone is
		// housekeeping's): skip the costlier container listing, which asks
		// every running task of the node for its state.
		return &podState{}, nil
	}
	cs, err := w.m.rt.ListContainers(ctx, runtime.ContainerFilter{PodUID: w.uid})
	if err != nil {
		return nil, err
	}
	pod, _ := w.snapshot()
	w.fillTerminationMessages(pod, cs)
	return &podState{sandboxes: sbs, containers: cs}, nil
}

// input reads everything a sync decides from, besides the runtime's
// state: the worker's status, the back-offs and probe results (copied),
// the network's readiness, a requested eviction (taken), the clock.
func (w *worker) input(pod *v1.Pod, deleted bool, st *podState) *syncInput {
	m := w.m
	in := &syncInput{
		pod: pod, deleted: deleted, status: w.status, now: m.now(), resync: m.cfg.ResyncInterval,
		state: st, netnsGone: map[string]bool{}, netReady: m.net.Ready(),
		sandboxBackoff: m.sandboxBackoff.state(w.uid + "/sandbox"), sandboxError: w.lastSandboxError(),
		crash: map[string]backoffState{}, probes: map[string]probeResults{},
		evict: w.takeEviction(), released: w.released,
	}
	for _, sb := range st.sandboxes {
		if sb.State == runtime.SandboxReady && !sb.Config.HostNetwork && !m.net.NetNSExists(sb.Config.NetNSPath) {
			in.netnsGone[sb.ID] = true
		}
	}
	for _, c := range append(append([]*v1.Container{}, pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...) {
		in.crash[c.Name] = m.crashBackoff.state(w.uid + "/" + c.Name)
		var r probeResults
		if c.StartupProbe != nil {
			r.startup = m.prober.Result(w.uid, c.Name, prober.Startup)
		}
		if c.LivenessProbe != nil {
			r.liveness = m.prober.Result(w.uid, c.Name, prober.Liveness)
		}
		if c.ReadinessProbe != nil {
			r.readiness = m.prober.Result(w.uid, c.Name, prober.Readiness)
		}
		in.probes[c.Name] = r
	}
	return in
}

// attempts returns the containers called name, newest attempt first; with
// sandboxID, only those of that sandbox.
func (s *podState) attempts(name, sandboxID string) []*runtime.ContainerStatus {
	var out []*runtime.ContainerStatus
	for i := range s.containers {
		c := &s.containers[i]
		if c.Name == name && (sandboxID == "" || c.SandboxID == sandboxID) {
			out = append(out, c)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: few attempts
		for j := i; j > 0 && newer(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func newer(a, b *runtime.ContainerStatus) bool {
	if a.Attempt != b.Attempt {
		return a.Attempt > b.Attempt
	}
	return a.CreatedAt.After(b.CreatedAt)
}

// latest returns the newest attempt of name and the one before it.
func (s *podState) latest(name, sandboxID string) (cur, prev *runtime.ContainerStatus) {
	as := s.attempts(name, sandboxID)
	if len(as) > 0 {
		cur = as[0]
	}
	if len(as) > 1 {
		prev = as[1]
	}
	return cur, prev
}
