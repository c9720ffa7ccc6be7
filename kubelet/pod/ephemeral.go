package pod

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Ephemeral containers (spec.ephemeralContainers, added through the API's
// pods/ephemeralcontainers subresource by kubectl debug or tugctl debug),
// as Kubernetes' kubelet runs them: each is started once, in the running
// pod's current sandbox — never while a sandbox is being made, never in a
// new sandbox after the old one went, and never again once it exited (or
// was once reported); it is never killed but with the pod. With
// targetContainerName it joins that container's process namespace (the
// runtime's PIDTargetID: CRI NamespaceMode TARGET), so the target's
// processes are visible. Its state is status.ephemeralContainerStatuses:
// never ready, counting neither for the pod's phase nor its conditions.

// LabelEphemeral marks ephemeral containers.
const LabelEphemeral = "tugboat.io/ephemeral-container"

// decideEphemeral is the step for ephemeral container ec in the pod's
// current sandbox (its ID).
func decideEphemeral(in *syncInput, ec *v1.EphemeralContainer, sandboxID string) containerStep {
	c := ec.AsContainer()
	s := containerStep{c: c, ephemeral: true}
	cur, _ := in.state.latest(c.Name, "")
	switch {
	case cur != nil && cur.State == runtime.ContainerCreated && cur.SandboxID == sandboxID:
		s.do, s.cur = stepStartCreated, cur
		return s
	case cur != nil:
		s.cur = cur
		return s // running, exited or in an old sandbox: as it is
	case everRan(in.status, c.Name):
		return s // the runtime lost it: not started again
	}
	if t := ec.TargetContainerName; t != "" {
		tc, _ := in.state.latest(t, sandboxID)
		if tc == nil || tc.State != runtime.ContainerRunning {
			s.do, s.wait = stepWait, &waiting{Reason: ReasonCreateContainerError,
				Message: fmt.Sprintf("target container %q is not running: its process namespace cannot be joined", t), Until: in.now.Add(configRetry)}
			return s
		}
		s.targetID = tc.ID
	}
	s.do = stepStart
	return s
}

// everRan reports whether status showed ephemeral container name made
// (with a container ID).
func everRan(status *v1.PodStatus, name string) bool {
	for _, cs := range status.GetEphemeralContainerStatuses() {
		if cs.Name == name && cs.ContainerId != "" {
			return true
		}
	}
	return false
}

// ephemeralViews are the pod's ephemeral containers as the status shows
// them; waiting are this sync's reasons by name (nil outside a sync).
func ephemeralViews(pod *v1.Pod, st *podState, waiting map[string]*waiting) []containerView {
	var out []containerView
	for _, ec := range pod.GetSpec().GetEphemeralContainers() {
		cur, prev := st.latest(ec.Name, "")
		out = append(out, containerView{spec: ec.AsContainer(), cur: cur, prev: prev, waiting: waiting[ec.Name]})
	}
	return out
}

// ephemeralStatuses are the statuses of views, keeping what prev showed
// for a container the runtime no longer has (it is never made again).
func ephemeralStatuses(views []containerView, prev []*v1.ContainerStatus) []*v1.ContainerStatus {
	var out []*v1.ContainerStatus
	for _, v := range views {
		cs := containerStatus(v)
		if v.cur == nil && v.waiting == nil {
			for _, p := range prev {
				if p.Name == cs.Name && p.ContainerId != "" {
					cs = proto.Clone(p).(*v1.ContainerStatus)
				}
			}
		}
		cs.Ready, cs.RestartCount = false, 0
		out = append(out, cs)
	}
	return out
}
