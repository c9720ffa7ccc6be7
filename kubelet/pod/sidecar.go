package pod

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Sidecar containers (KEP-753): an init container with restartPolicy
// Always. Kubernetes' semantics:
//
//   - it starts in order with the other init containers, and the next one
//     starts once it has started (its postStart hook returned — the sync
//     runs it — and its startupProbe passed, if any); once a later init
//     container or an app container ran in the sandbox, a sidecar that
//     restarts no longer holds anything up;
//   - it is restarted whenever it exits (under the crash back-off),
//     whatever the pod's restartPolicy, and killed and restarted on a
//     failed liveness or startup probe; it may have readiness, liveness
//     and startup probes, and its readiness counts for the pod's;
//   - it does not hold up the pod's completion: once every app container
//     has finished for good (restartPolicy Never or OnFailure), the
//     sidecars are stopped (preStop, stop signal, grace) and the pod's
//     phase is its app containers';
//   - when the pod stops, its sidecars are stopped after its app
//     containers, in reverse order of the spec: each sidecar's preStop
//     runs at once with the others', then it waits for the app containers
//     and the sidecars after it to have stopped, inside its grace period
//     (Kubernetes' terminationOrdering).

// isSidecar reports whether init container c is a sidecar.
func isSidecar(c *v1.Container) bool { return c.GetRestartPolicy() == "Always" }

// podSidecar reports whether c is one of pod's sidecars: an init
// container with restartPolicy Always (an app container may have its
// own restartPolicy Always too, and is no sidecar).
func podSidecar(pod *v1.Pod, c *v1.Container) bool {
	for _, ic := range pod.GetSpec().GetInitContainers() {
		if ic.Name == c.GetName() {
			return isSidecar(ic)
		}
	}
	return false
}

// hasSidecar reports whether the pod has a sidecar.
func hasSidecar(pod *v1.Pod) bool {
	for _, c := range pod.GetSpec().GetInitContainers() {
		if isSidecar(c) {
			return true
		}
	}
	return false
}

// decideSidecar is the step for sidecar c whose latest attempt in the
// sandbox (scope) is cur.
func decideSidecar(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus, scope string) containerStep {
	switch {
	case cur == nil:
		if appsFinished(in) {
			return containerStep{c: c, init: true}
		}
		return containerStep{c: c, init: true, do: stepStart, attempt: nextAttempt(in, c.Name)}
	case cur.State == runtime.ContainerCreated:
		return containerStep{c: c, init: true, do: stepStartCreated, cur: cur}
	case cur.State == runtime.ContainerUnknown:
		return containerStep{c: c, init: true, cur: cur}
	case cur.State == runtime.ContainerRunning && cur.SandboxID == scope:
		if reason := killReason(in, c, cur); reason != "" {
			return containerStep{c: c, init: true, do: stepKill, cur: cur, killReason: reason}
		}
		return containerStep{c: c, init: true, cur: cur}
	}
	return afterExit(in, c, cur)
}

// sidecarStarted reports whether sidecar c's attempt cur runs and has
// started (no startupProbe, or it passed).
func sidecarStarted(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus) bool {
	if cur == nil || cur.State != runtime.ContainerRunning {
		return false
	}
	var prev *v1.ContainerStatus
	for _, cs := range in.status.GetInitContainerStatuses() {
		if cs.Name == c.Name {
			prev = cs
		}
	}
	_, started := readiness(c, cur, prev, in.probes[c.Name])
	return started
}

// startedAfter reports whether one of the init containers after a
// sidecar (rest), or an app container, has an attempt in the sandbox: the
// sidecar started before, so its restart holds nothing up.
func startedAfter(in *syncInput, rest []*v1.Container, scope string) bool {
	for _, c := range append(append([]*v1.Container{}, rest...), in.pod.GetSpec().GetContainers()...) {
		if cur, _ := in.state.latest(c.Name, scope); cur != nil {
			return true
		}
	}
	return false
}

// appsFinished reports whether every app container exited for good (is
// not restarted under the pod's restartPolicy): the pod is done, and its
// sidecars are stopped rather than restarted.
func appsFinished(in *syncInput) bool {
	apps := in.pod.GetSpec().GetContainers()
	for _, c := range apps {
		cur, _ := in.state.latest(c.Name, "")
		if cur == nil || cur.State != runtime.ContainerExited || containerShouldRestart(c, in.pod.GetSpec(), cur.ExitCode) {
			return false
		}
	}
	return len(apps) > 0
}

// stopOrder returns, for each running sidecar of the pod (by container
// ID), the IDs of the containers it waits for before its stop signal:
// every app container and every sidecar after it in the spec.
func stopOrder(pod *v1.Pod, running []runtime.ContainerStatus) map[string][]string {
	rank := map[string]int{} // sidecars by spec position; app containers rank after all
	inits := pod.GetSpec().GetInitContainers()
	for i, c := range inits {
		if isSidecar(c) {
			rank[c.Name] = i
		}
	}
	for _, c := range pod.GetSpec().GetContainers() {
		rank[c.Name] = len(inits)
	}
	out := map[string][]string{}
	for _, s := range running {
		rs, ok := rank[s.Name]
		if !ok || rs == len(inits) {
			continue
		}
		for _, o := range running {
			if ro, ok := rank[o.Name]; ok && ro > rs {
				out[s.ID] = append(out[s.ID], o.ID)
			}
		}
	}
	return out
}
