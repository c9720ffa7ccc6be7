package pod

import (
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// statusInput is everything buildStatus looks at.
type statusInput struct {
	pod  *v1.Pod
	prev *v1.PodStatus // the status last computed (or the API's, at first)
	now  time.Time
	// accepted is when this kubelet first saw the pod.
	accepted time.Time
	hostIP   string
	podIP    string

	sandboxReady bool
	// sandboxWaiting says why there is no sandbox (yet).
	sandboxWaiting *waiting
	// networkReleased: the pod is terminal and its sandbox was stopped.
	networkReleased bool

	initDone, initFailed bool
	init, app            []containerView
	// ephemeral are the ephemeral containers (ephemeral.go): reported,
	// but neither in the phase nor the conditions.
	ephemeral []containerView

	// The resize state (resize.go): the allocation, what each running
	// container was given (by ID), a resize not admitted, one not yet
	// applied (and why).
	alloc            allocation
	applied          map[string]applied
	resizePending    *resizePending
	resizeInProgress bool
	resizeError      string
}

var imageReasons = map[string]bool{
	ReasonErrImagePull: true, ReasonImagePullBackOff: true, ReasonErrImageNeverPull: true, ReasonInvalidImageName: true,
}

// keepLastState fills an empty lastState of a restarted container from
// the last status, when the runtime no longer has the attempt before (its
// sandbox was removed, or lost with a reboot): that attempt's last known
// state, terminated — or, if it was last seen running, terminated with
// ContainerStatusUnknown and 137, as Kubernetes reports a container that
// could not be located.
func keepLastState(cs *v1.ContainerStatus, prev []*v1.ContainerStatus) *v1.ContainerStatus {
	if cs.GetLastState().GetTerminated() != nil || cs.RestartCount == 0 {
		return cs
	}
	for _, p := range prev {
		if p.Name != cs.Name {
			continue
		}
		switch {
		case p.ContainerId == cs.ContainerId:
			if p.GetLastState().GetTerminated() != nil {
				cs.LastState = p.LastState
			}
		case p.GetState().GetTerminated() != nil:
			cs.LastState = &v1.ContainerState{Terminated: p.State.Terminated}
		case p.GetState().GetRunning() != nil:
			cs.LastState = &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 137, Reason: "ContainerStatusUnknown", ContainerId: p.ContainerId,
				Message:   "The container could not be located when the pod was terminated",
				StartedAt: p.State.Running.StartedAt,
			}}
		}
	}
	return cs
}

// buildStatus computes the pod's status. It is a pure function of its
// input; conditions the kubelet does not own (PodScheduled) are kept.
func buildStatus(in statusInput) *v1.PodStatus {
	prev := in.prev
	if prev == nil {
		prev = &v1.PodStatus{}
	}
	st := &v1.PodStatus{
		HostIp:            in.hostIP,
		PodIp:             in.podIP,
		StartTime:         prev.StartTime,
		QosClass:          resource.PodQOSClass(in.pod.GetSpec()),
		NominatedNodeName: prev.NominatedNodeName,
	}
	if st.StartTime == nil {
		st.StartTime = ts(in.accepted)
	}
	for _, v := range in.init {
		st.InitContainerStatuses = append(st.InitContainerStatuses, in.withResources(keepLastState(containerStatus(v), prev.InitContainerStatuses), v))
	}
	for _, v := range in.app {
		st.ContainerStatuses = append(st.ContainerStatuses, in.withResources(keepLastState(containerStatus(v), prev.ContainerStatuses), v))
	}
	st.EphemeralContainerStatuses = ephemeralStatuses(in.ephemeral, prev.EphemeralContainerStatuses)
	st.Phase = podPhase(in.pod.GetSpec(), in.initDone, in.initFailed, st.ContainerStatuses)
	if IsTerminal(prev.Phase) {
		st.Phase = prev.Phase // terminal is final, with its reason (Evicted)
		st.Reason, st.Message = prev.Reason, prev.Message
	}

	conds := make([]*v1.Condition, 0, len(prev.Conditions)+8)
	for _, c := range prev.Conditions {
		conds = append(conds, proto.Clone(c).(*v1.Condition))
	}
	now := in.now
	conds = keepTrue(conds, CondAccepted, true, "", "", in.accepted)

	// Images: a problem wins; True once every container was created.
	all := append(append([]containerView{}, in.init...), in.app...)
	var imageProblem *waiting
	allCreated := true
	for _, v := range all {
		if v.waiting != nil && imageReasons[v.waiting.Reason] && imageProblem == nil {
			imageProblem = v.waiting
		}
		if v.cur == nil {
			allCreated = false
		}
	}
	switch {
	case imageProblem != nil:
		conds = setCondition(conds, CondImagesReady, false, imageProblem.Reason, imageProblem.Message, now)
	case allCreated && in.initDone:
		conds = setCondition(conds, CondImagesReady, true, "", "", now)
	}

	switch {
	case in.sandboxReady:
		conds = setCondition(conds, CondPodReadyToStartContainers, true, "", "pod IP "+in.podIP, now)
	case in.networkReleased:
		conds = setCondition(conds, CondPodReadyToStartContainers, false, "PodCompleted", "the pod's sandbox and network were released", now)
	case in.sandboxWaiting != nil:
		conds = setCondition(conds, CondPodReadyToStartContainers, false, in.sandboxWaiting.Reason, in.sandboxWaiting.Message, now)
	default:
		conds = setCondition(conds, CondPodReadyToStartContainers, false, "SandboxNotReady", "the pod's sandbox is being created", now)
	}

	sidecars := map[string]bool{}
	for _, c := range in.pod.GetSpec().GetInitContainers() {
		sidecars[c.Name] = isSidecar(c)
	}
	switch {
	case in.initDone:
		conds = setCondition(conds, CondInitialized, true, "", "", now)
	default:
		incomplete := names(st.InitContainerStatuses, func(cs *v1.ContainerStatus) bool {
			if sidecars[cs.Name] {
				return !cs.Started
			}
			return cs.GetState().GetTerminated().GetExitCode() != 0 || cs.GetState().GetTerminated() == nil
		})
		conds = setCondition(conds, CondInitialized, false, "ContainersNotInitialized", "containers with incomplete status: "+bracketList(incomplete), now)
	}

	notStarted := names(st.ContainerStatuses, func(cs *v1.ContainerStatus) bool {
		return cs.GetState().GetRunning() == nil && cs.GetState().GetTerminated() == nil && cs.GetLastState().GetTerminated() == nil
	})
	if len(notStarted) == 0 {
		conds = keepTrue(conds, CondContainersStarted, true, "", "", now)
	} else {
		conds = keepTrue(conds, CondContainersStarted, false, "ContainersNotStarted", "containers not started yet: "+bracketList(notStarted), now)
	}

	// Sidecars count for readiness, as in Kubernetes.
	unready := names(st.ContainerStatuses, func(cs *v1.ContainerStatus) bool { return !cs.Ready })
	unready = append(unready, names(st.InitContainerStatuses, func(cs *v1.ContainerStatus) bool { return sidecars[cs.Name] && !cs.Ready })...)
	sort.Strings(unready)
	switch {
	case IsTerminal(st.Phase):
		conds = setCondition(conds, CondContainersReady, false, "PodCompleted", "", now)
		conds = setCondition(conds, CondReady, false, "PodCompleted", "", now)
	case len(unready) == 0 && len(st.ContainerStatuses) > 0:
		conds = setCondition(conds, CondContainersReady, true, "", "", now)
		conds = setCondition(conds, CondReady, true, "", "", now)
	default:
		msg := "containers with unready status: " + bracketList(unready)
		conds = setCondition(conds, CondContainersReady, false, "ContainersNotReady", msg, now)
		conds = setCondition(conds, CondReady, false, "ContainersNotReady", msg, now)
	}
	st.Conditions = resizeConditions(conds, in)
	return st
}
