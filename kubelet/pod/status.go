package pod

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Pod condition types. The first four are Kubernetes'; the tugboat.io ones
// (with PodReadyToStartContainers) record when each step of starting the
// pod was reached, so `tugctl trace` can show a timeline: a condition's
// lastTransitionTime is the time its status last changed, and a False
// condition's reason and message say which step is stuck and why.
//
//	PodScheduled                 set by the scheduler (or Bind), not the kubelet
//	tugboat.io/Accepted          the kubelet saw the pod (its watch delivered it)
//	tugboat.io/ImagesReady       every container's image is on the node
//	                             (False: ErrImagePull, ImagePullBackOff,
//	                             ErrImageNeverPull, with the import hint)
//	PodReadyToStartContainers    sandbox, network namespace and CNI ADD done
//	                             (False: FailedCreatePodSandbox, NetworkNotReady)
//	Initialized                  init containers completed
//	tugboat.io/ContainersStarted every container has been started once
//	ContainersReady, Ready       every container is ready
const (
	CondPodScheduled              = "PodScheduled"
	CondAccepted                  = "tugboat.io/Accepted"
	CondImagesReady               = "tugboat.io/ImagesReady"
	CondPodReadyToStartContainers = "PodReadyToStartContainers"
	CondInitialized               = "Initialized"
	CondContainersStarted         = "tugboat.io/ContainersStarted"
	CondContainersReady           = "ContainersReady"
	CondReady                     = "Ready"
)

// Pod phases.
const (
	PhasePending   = "Pending"
	PhaseRunning   = "Running"
	PhaseSucceeded = "Succeeded"
	PhaseFailed    = "Failed"
)

// IsTerminal reports whether phase is Succeeded or Failed.
func IsTerminal(phase string) bool { return phase == PhaseSucceeded || phase == PhaseFailed }

// containerView is what the worker knows about one container of the spec
// when it computes the status.
type containerView struct {
	spec *v1.Container
	// cur is the latest attempt, prev the one before (nil if none).
	cur, prev *runtime.ContainerStatus
	// waiting, if set, is why the container is not running (this sync's
	// verdict: an image problem, a back-off, a config error).
	waiting *waiting
	ready   bool
	started bool
}

const containerIDPrefix = "containerd://"

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func terminatedState(c *runtime.ContainerStatus) *v1.ContainerState {
	if c == nil || c.State != runtime.ContainerExited {
		return nil
	}
	return &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ExitCode:    int32(c.ExitCode),
		Signal:      exitSignal(c.ExitCode),
		Reason:      c.Reason,
		Message:     c.Message,
		StartedAt:   ts(c.StartedAt),
		FinishedAt:  ts(c.FinishedAt),
		ContainerId: containerIDPrefix + c.ID,
	}}
}

// exitSignal guesses the signal from a shell-style exit code (128+n).
func exitSignal(code int) int32 {
	if code > 128 && code < 128+65 {
		return int32(code - 128)
	}
	return 0
}

// containerStatus renders one container's status.
func containerStatus(v containerView) *v1.ContainerStatus {
	cs := &v1.ContainerStatus{Name: v.spec.Name, Image: v.spec.Image}
	cur := v.cur
	if cur != nil {
		cs.ImageId = cur.ImageID
		cs.ContainerId = containerIDPrefix + cur.ID
		cs.RestartCount = int32(cur.Attempt)
		cs.VolumeMounts = volumeMountStatuses(v.spec, cur.Labels)
	}
	switch {
	case v.waiting != nil:
		cs.State = &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: v.waiting.Reason, Message: v.waiting.Message}}
		if cur != nil && cur.State == runtime.ContainerExited {
			cs.LastState = terminatedState(cur)
		} else {
			cs.LastState = terminatedState(v.prev)
		}
	case cur == nil || cur.State == runtime.ContainerCreated:
		cs.State = &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
		cs.LastState = terminatedState(v.prev)
	case cur.State == runtime.ContainerRunning:
		cs.State = &v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ts(cur.StartedAt)}}
		cs.LastState = terminatedState(v.prev)
		cs.Ready = v.ready
		cs.Started = v.started
	case cur.State == runtime.ContainerExited:
		cs.State = terminatedState(cur)
		cs.LastState = terminatedState(v.prev)
	default:
		cs.State = &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerStatusUnknown",
			Message: "the container runtime cannot tell the container's state"}}
		cs.LastState = terminatedState(v.prev)
	}
	if cs.LastState == nil {
		cs.LastState = &v1.ContainerState{}
	}
	return cs
}

// podPhase is Kubernetes' phase rule for a pod without sidecars: once
// every app container has stopped, the pod runs on while one of them is
// restarted (by its restartPolicyRules, its own restartPolicy or the
// pod's: containerShouldRestart, on its last exit code), else it
// Succeeded when all exited 0 and Failed otherwise.
func podPhase(spec *v1.PodSpec, initDone, initFailed bool, statuses []*v1.ContainerStatus) string {
	if initFailed {
		return PhaseFailed
	}
	if !initDone {
		return PhasePending
	}
	byName := map[string]*v1.Container{}
	for _, c := range spec.GetContainers() {
		byName[c.Name] = c
	}
	var running, waiting, stopped, succeeded int
	restarted := false
	for _, cs := range statuses {
		switch st := cs.GetState(); {
		case st.GetRunning() != nil:
			running++
		case st.GetTerminated() != nil:
			stopped++
			if st.GetTerminated().ExitCode == 0 {
				succeeded++
			}
			restarted = restarted || containerShouldRestart(byName[cs.GetName()], spec, int(st.GetTerminated().ExitCode))
		case st.GetWaiting() != nil:
			if last := cs.GetLastState().GetTerminated(); last != nil {
				stopped++ // restarting
				restarted = restarted || containerShouldRestart(byName[cs.GetName()], spec, int(last.ExitCode))
			} else {
				waiting++
			}
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return PhasePending
	case running > 0:
		return PhaseRunning
	case stopped > 0 && stopped == len(statuses):
		switch {
		case restarted:
			return PhaseRunning
		case stopped == succeeded:
			return PhaseSucceeded
		}
		return PhaseFailed
	}
	return PhasePending
}

// setCondition sets a condition, keeping its lastTransitionTime unless its
// status changes.
func setCondition(conds []*v1.Condition, typ string, status bool, reason, message string, now time.Time) []*v1.Condition {
	s := "False"
	if status {
		s = "True"
	}
	for i, c := range conds {
		if c.Type != typ {
			continue
		}
		next := proto.Clone(c).(*v1.Condition)
		if c.Status != s {
			next.LastTransitionTime = timestamppb.New(now)
		}
		next.Status, next.Reason, next.Message = s, reason, message
		conds[i] = next
		return conds
	}
	return append(conds, &v1.Condition{Type: typ, Status: s, Reason: reason, Message: message, LastTransitionTime: timestamppb.New(now)})
}

// keepTrue sets a one-way step condition: once True it stays True (with
// its time) even if a later sync would say otherwise.
func keepTrue(conds []*v1.Condition, typ string, status bool, reason, message string, now time.Time) []*v1.Condition {
	for _, c := range conds {
		if c.Type == typ && c.Status == "True" {
			return conds
		}
	}
	return setCondition(conds, typ, status, reason, message, now)
}

func findCondition(conds []*v1.Condition, typ string) *v1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return nil
}

// notReadyNames lists containers whose predicate is false, for condition
// messages ("containers with unready status: [a b]").
func names(statuses []*v1.ContainerStatus, pred func(*v1.ContainerStatus) bool) []string {
	var out []string
	for _, cs := range statuses {
		if pred(cs) {
			out = append(out, cs.Name)
		}
	}
	sort.Strings(out)
	return out
}

func crashLoopMessage(pod *v1.Pod, c string, delay time.Duration) string {
	m := pod.GetMetadata()
	return fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", delay, c, m.GetName(), m.GetNamespace(), m.GetUid())
}

func bracketList(ns []string) string { return "[" + strings.Join(ns, " ") + "]" }
