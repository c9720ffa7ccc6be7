package table

import (
	"fmt"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// PodStatus is kubectl's pod STATUS column logic: the phase, overridden by
// the pod's reason, an init container's progress, a container's waiting or
// terminated reason (CrashLoopBackOff, ImagePullBackOff, Error...), and
// Terminating once deletion has started. It returns the ready container
// count, the status and the RESTARTS cell ("4 (90s ago)").
func PodStatus(p *v1.Pod, now time.Time) (ready, status, restarts string) {
	st := p.GetStatus()
	reason := st.GetPhase()
	if st.GetReason() != "" {
		reason = st.GetReason()
	}
	total := 0
	var lastRestart time.Time
	noteRestart := func(cs *v1.ContainerStatus) {
		total += int(cs.GetRestartCount())
		if t := cs.GetLastState().GetTerminated().GetFinishedAt(); t != nil && t.AsTime().After(lastRestart) {
			lastRestart = t.AsTime()
		}
	}
	initializing := false
	for i, cs := range st.GetInitContainerStatuses() {
		noteRestart(cs)
		term, wait := cs.GetState().GetTerminated(), cs.GetState().GetWaiting()
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case term != nil:
			switch {
			case term.Reason != "":
				reason = "Init:" + term.Reason
			case term.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			reason = "Init:" + wait.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.GetSpec().GetInitContainers()))
		}
		initializing = true
		break
	}
	readyCount := 0
	if !initializing {
		total, lastRestart = 0, time.Time{}
		hasRunning := false
		list := st.GetContainerStatuses()
		for i := len(list) - 1; i >= 0; i-- {
			cs := list[i]
			noteRestart(cs)
			term, wait := cs.GetState().GetTerminated(), cs.GetState().GetWaiting()
			switch {
			case wait != nil && wait.Reason != "":
				reason = wait.Reason
			case term != nil && term.Reason != "":
				reason = term.Reason
			case term != nil && term.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", term.Signal)
			case term != nil:
				reason = fmt.Sprintf("ExitCode:%d", term.ExitCode)
			case cs.Ready && cs.GetState().GetRunning() != nil:
				hasRunning = true
				readyCount++
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			if ConditionStatus(st.GetConditions(), "Ready") == "True" {
				reason = "Running"
			}
		}
	}
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		reason = "Terminating"
		if st.GetReason() == "NodeLost" {
			reason = "Unknown"
		}
	}
	restarts = fmt.Sprint(total)
	if total > 0 && !lastRestart.IsZero() {
		restarts += fmt.Sprintf(" (%s ago)", HumanDuration(now.Sub(lastRestart)))
	}
	return fmt.Sprint(readyCount), reason, restarts
}
