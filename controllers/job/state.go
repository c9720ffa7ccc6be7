package job

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// state is one sync's view of a Job: its pods sorted by what they mean
// for the Job, and the status being built (a copy of the stored one).
type state struct {
	job *v1.Job
	st  *v1.JobStatus
	now time.Time

	active      []*v1.Pod // not finished, not being deleted
	ready       int32
	terminating int32
	// newlyFinished have the finalizer and are not yet recorded.
	newlyFinished []*v1.Pod
	// release are pods whose finalizer may go now (recorded, or ignored).
	release []*v1.Pod
	// restarts of active pods count as failures with restartPolicy OnFailure.
	restarts int32
	// held are the uids of pods that still have the finalizer.
	held map[string]bool
	// lastFailure is when the newest failed pod finished.
	lastFailure time.Time

	failReason, failMessage string
}

// newState sorts pods for one sync; tracked says whether a pod still
// holds the tracking finalizer (Controller.tracked).
func newState(j *v1.Job, pods []*v1.Pod, now time.Time, tracked func(*v1.Pod) bool) *state {
	st, _ := proto.Clone(j.GetStatus()).(*v1.JobStatus)
	if st == nil {
		st = &v1.JobStatus{}
	}
	if st.UncountedTerminatedPods == nil {
		st.UncountedTerminatedPods = &v1.UncountedTerminatedPods{}
	}
	s := &state{job: j, st: st, now: now, held: map[string]bool{}}
	u := st.UncountedTerminatedPods
	for _, p := range pods {
		held := tracked(p)
		if held {
			s.held[p.GetMetadata().GetUid()] = true
		}
		done := finished(p) || p.GetMetadata().GetDeletionTimestamp() != nil
		if p.GetStatus().GetPhase() == "Failed" || (done && p.GetStatus().GetPhase() != "Succeeded") {
			if t := finishTime(p); t.After(s.lastFailure) {
				s.lastFailure = t
			}
		}
		switch {
		case !done:
			s.active = append(s.active, p)
			if controller.IsPodReady(p) {
				s.ready++
			}
			for _, cs := range p.GetStatus().GetContainerStatuses() {
				s.restarts += cs.GetRestartCount()
			}
		case !held:
			// Counted already (or never tracked).
			if !finished(p) {
				s.terminating++
			}
		case slices.Contains(u.Succeeded, p.GetMetadata().GetUid()) || slices.Contains(u.Failed, p.GetMetadata().GetUid()):
			s.release = append(s.release, p)
		default:
			s.newlyFinished = append(s.newlyFinished, p)
		}
	}
	return s
}

// recordFinished puts the newly finished pods into
// uncountedTerminatedPods (and their indexes into completedIndexes),
// applying the pod failure policy; it reports whether the status changed.
func (s *state) recordFinished() bool {
	u := s.st.UncountedTerminatedPods
	indexed := s.job.GetSpec().GetCompletionMode() == "Indexed"
	completed := parseIndexes(s.st.CompletedIndexes)
	changed := false
	for _, p := range s.newlyFinished {
		uid := p.GetMetadata().GetUid()
		if p.GetStatus().GetPhase() == "Succeeded" {
			if indexed {
				i, ok := podIndex(p)
				if !ok || i >= int(s.job.GetSpec().GetCompletions()) {
					s.release = append(s.release, p) // not a valid index: not counted
					continue
				}
				completed[i] = true
			}
			u.Succeeded = append(u.Succeeded, uid)
			s.release = append(s.release, p)
			changed = true
			continue
		}
		action, rule := failureAction(s.job.GetSpec().GetPodFailurePolicy(), p)
		switch action {
		case "Ignore":
			s.release = append(s.release, p)
			continue
		case "FailJob":
			s.failReason = ReasonPodFailurePolicy
			s.failMessage = fmt.Sprintf("Container of pod %s matched rule %d of the pod failure policy (FailJob)", p.GetMetadata().GetName(), rule)
		}
		u.Failed = append(u.Failed, uid)
		s.release = append(s.release, p)
		changed = true
	}
	if indexed {
		if ci := formatIndexes(completed); ci != s.st.CompletedIndexes {
			s.st.CompletedIndexes = ci
			changed = true
		}
	}
	s.newlyFinished = nil
	return changed
}

// count moves the released pods out of uncountedTerminatedPods into the
// counts, once each.
func (s *state) count(released []*v1.Pod) {
	u := s.st.UncountedTerminatedPods
	gone := map[string]bool{}
	for _, p := range released {
		gone[p.GetMetadata().GetUid()] = true
	}
	// A recorded pod without its finalizer (released by a sync that did
	// not get to count it) or gone altogether is counted too.
	for _, uid := range slices.Concat(u.Succeeded, u.Failed) {
		if !s.held[uid] {
			gone[uid] = true
		}
	}
	for uid := range gone {
		if i := slices.Index(u.Succeeded, uid); i >= 0 {
			u.Succeeded = slices.Delete(u.Succeeded, i, i+1)
			s.st.Succeeded++
		} else if i := slices.Index(u.Failed, uid); i >= 0 {
			u.Failed = slices.Delete(u.Failed, i, i+1)
			s.st.Failed++
		}
	}
}

// counting reports whether some finished pods are recorded but not yet
// counted (their finalizer could not be removed yet).
func (s *state) counting() bool {
	u := s.st.GetUncountedTerminatedPods()
	return len(u.GetSucceeded())+len(u.GetFailed()) > 0
}

func (s *state) succeeded() int32 {
	return s.st.Succeeded + int32(len(s.st.GetUncountedTerminatedPods().GetSucceeded()))
}

func (s *state) failed() int32 {
	return s.st.Failed + int32(len(s.st.GetUncountedTerminatedPods().GetFailed()))
}

// complete reports whether the Job has all the successes it needs.
func (s *state) complete() bool {
	sp := s.job.GetSpec()
	if sp.GetCompletionMode() == "Indexed" {
		return len(parseIndexes(s.st.CompletedIndexes)) >= int(sp.GetCompletions())
	}
	if sp.Completions == nil {
		return s.succeeded() > 0 && len(s.active) == 0
	}
	return s.succeeded() >= sp.GetCompletions()
}

// checkBackoffLimit sets the failure reason when the Job failed more often
// than its backoffLimit allows.
func (s *state) checkBackoffLimit() {
	if s.failReason != "" {
		return
	}
	failures := s.failed()
	if s.job.GetSpec().GetTemplate().GetSpec().GetRestartPolicy() == "OnFailure" {
		failures += s.restarts
	}
	if failures > s.job.GetSpec().GetBackoffLimit() {
		s.failReason = ReasonBackoffLimitExceeded
		s.failMessage = "Job has reached the specified backoff limit"
	}
}

func (s *state) deadline() (time.Time, bool) {
	ads := s.job.GetSpec().ActiveDeadlineSeconds
	if ads == nil || s.st.StartTime == nil {
		return time.Time{}, false
	}
	return s.st.StartTime.AsTime().Add(time.Duration(*ads) * time.Second), true
}

func (s *state) deadlineExceeded() bool {
	d, ok := s.deadline()
	return ok && !s.now.Before(d)
}

func (s *state) untilDeadline() time.Duration {
	d, ok := s.deadline()
	if !ok {
		return 0
	}
	return d.Sub(s.now)
}

// fillCounts writes the pod counts into the status.
func (s *state) fillCounts() {
	s.st.Active = int32(len(s.active))
	s.st.Ready = proto.Int32(s.ready)
	s.st.Terminating = s.terminating
}

func finished(p *v1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

// finishTime is when a finished pod's last container ended (else the
// latest condition change).
func finishTime(p *v1.Pod) time.Time {
	var t time.Time
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if ft := cs.GetState().GetTerminated().GetFinishedAt(); ft != nil && ft.AsTime().After(t) {
			t = ft.AsTime()
		}
	}
	if t.IsZero() {
		for _, c := range p.GetStatus().GetConditions() {
			if lt := c.GetLastTransitionTime(); lt != nil && lt.AsTime().After(t) {
				t = lt.AsTime()
			}
		}
	}
	return t
}

// failureAction is what the pod failure policy says of a failed pod:
// FailJob, Ignore or Count (also when no rule matches), and the rule's index.
func failureAction(p *v1.PodFailurePolicy, pod *v1.Pod) (string, int) {
	for i, r := range p.GetRules() {
		if e := r.OnExitCodes; e != nil {
			for _, cs := range pod.GetStatus().GetContainerStatuses() {
				t := cs.GetState().GetTerminated()
				if t == nil || (e.ContainerName != "" && cs.GetName() != e.ContainerName) || t.GetExitCode() == 0 {
					continue
				}
				if slices.Contains(e.Values, t.GetExitCode()) == (e.Operator == "In") {
					return r.Action, i
				}
			}
		}
		for _, pat := range r.OnPodConditions {
			if c := controller.GetCondition(pod.GetStatus().GetConditions(), pat.Type); c != nil && c.Status == pat.Status {
				return r.Action, i
			}
		}
	}
	return "Count", -1
}

func finishedCondition(j *v1.Job) *v1.Condition {
	for _, c := range j.GetStatus().GetConditions() {
		if (c.Type == "Complete" || c.Type == "Failed") && c.Status == controller.True {
			return c
		}
	}
	return nil
}
