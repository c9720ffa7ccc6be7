package pod

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// A sync decides, then does. decide is a pure function from a syncInput
// (everything read when the sync starts: the pod, what the runtime has,
// the worker's last status, copies of the back-offs and probe results,
// the clock) to a plan; the sync then carries the plan out (sync.go,
// containers.go, sandbox.go, stop.go) and reports what came of it as the
// pod's status. Neither the input nor the plan outlives the sync.

// syncInput is what one sync decides from.
type syncInput struct {
	pod *v1.Pod
	// deleted: the API no longer has the pod.
	deleted bool
	// status is the worker's last status (the API's, at first).
	status *v1.PodStatus
	now    time.Time
	// resync is how long the worker sleeps when nothing is due sooner.
	resync time.Duration
	state  *podState
	// netnsGone names the sandboxes whose network namespace vanished (a
	// reboot): they are stale.
	netnsGone map[string]bool
	// netReady is the pod network's readiness (nil: ready).
	netReady error
	// sandboxBackoff is the pod's sandbox back-off, sandboxError the last
	// failure's message.
	sandboxBackoff backoffState
	sandboxError   string
	// crash is the crash back-off by container name.
	crash map[string]backoffState
	// probes are the probe results by container name.
	probes map[string]probeResults
	// evict is a requested eviction's message ("" for none).
	evict string
	// released: the pod is terminal and its sandboxes were released.
	released bool
	// alloc is the pod's allocation, resizePending a resize the node could
	// not admit; applied what each running container was given, by ID
	// (resize.go).
	alloc         allocation
	resizePending *resizePending
	applied       map[string]applied
}

// probeResults are one container's probe results.
type probeResults struct {
	startup, liveness, readiness prober.Result
}

// plan is what one sync does.
type plan struct {
	action action
	// reason and message of a pod failed by the node (actFail).
	reason, message string
	// grace is how long stopped containers get (actTerminate, actFail).
	grace time.Duration

	// The rest is for actRun.
	sandbox sandboxStep
	// stale are sandboxes torn down once the pod has a usable one.
	stale []runtime.SandboxStatus
	// containers are the steps in order: init containers, then the app
	// containers (the first init container not done is the only one with
	// a step while any is).
	containers []containerStep
	// initDone: every init container exited 0 (or there is none);
	// initFailed: one failed under restartPolicy Never (the pod fails).
	initDone, initFailed bool
	// wakeAt is the soonest a decision is due again (a back-off's end);
	// the sync wakes then at the latest.
	wakeAt time.Time
}

type action int

const (
	// actRun converges a live pod: sandbox, then containers.
	actRun action = iota
	// actTerminate stops, tears down and deletes a pod being deleted.
	actTerminate
	// actFail fails the pod for good (eviction, deadline).
	actFail
	// actTerminal keeps a finished pod finished.
	actTerminal
)

// sandboxStep is what becomes of the pod's sandbox.
type sandboxStep struct {
	// current is the sandbox the containers run in (nil: none usable).
	current *runtime.SandboxStatus
	// create: make a new one with this attempt number.
	create  bool
	attempt uint32
	// wait: no sandbox yet, and why (a back-off after a failure).
	wait *waiting
	// refuse: the pod network is not ready, so no sandbox is tried; the
	// sync records it as a failed attempt (event, back-off).
	refuse string
}

// containerStep is what the sync does with one container of the spec.
type containerStep struct {
	c    *v1.Container
	init bool
	do   stepKind
	// cur is the latest attempt the step is about (nil: none yet).
	cur *runtime.ContainerStatus
	// attempt numbers a new attempt (stepStart).
	attempt uint32
	// backoffFrom, if set, is the exit the crash back-off advances from
	// (a restart); restart counts it in the restarts metric.
	backoffFrom time.Time
	restart     bool
	// killReason says why a running container is killed (stepKill).
	killReason string
	// wait is why the container does not run yet (stepWait).
	wait *waiting
	// ephemeral: c is an ephemeral container (ephemeral.go), started in
	// the process namespace of the container targetID if set.
	ephemeral bool
	targetID  string
}

type stepKind int

const (
	stepNone         stepKind = iota // leave it as it is
	stepStart                        // pull, create and start a new attempt
	stepStartCreated                 // start an attempt created but never started
	stepKill                         // kill it; what follows is decided on its state after
	stepWait                         // it waits (wait says why)
)

// Kill reasons.
const (
	killImageChanged = "image changed"
	killStartup      = "startup probe"
	killLiveness     = "liveness probe"
	// killResize (resize.go): a resize whose resizePolicy is RestartContainer.
)

// newSandbox is the scope of containers in a sandbox not made yet: no
// attempt is in it.
const newSandbox = "(new sandbox)"

// decide is the plan for in. It reads nothing but in.
func decide(in *syncInput) *plan {
	p := &plan{wakeAt: in.now.Add(in.resync)}
	switch {
	case in.deleted || in.pod.GetMetadata().GetDeletionTimestamp() != nil:
		p.action, p.grace = actTerminate, terminationGrace(in.pod, in.deleted)
		return p
	case IsTerminal(in.status.GetPhase()):
		p.action = actTerminal
		return p
	case in.evict != "":
		p.action, p.reason, p.message, p.grace = actFail, ReasonEvicted, in.evict, podGrace(in.pod)
		return p
	}
	if d := deadline(in.pod, in.status); !d.IsZero() && !in.now.Before(d) {
		p.action, p.reason, p.message, p.grace = actFail, ReasonDeadlineExceeded, MessageDeadlineExceeded, podGrace(in.pod)
		return p
	}
	p.action = actRun
	cur, stale := currentSandbox(in)
	p.sandbox.current = cur
	if cur != nil {
		p.stale = stale
	} else if needsRun(in.pod, in.state) {
		p.sandbox = decideSandbox(in)
		if p.sandbox.create {
			p.stale = stale
		}
		if w := p.sandbox.wait; w != nil {
			p.wakeAt = earliest(p.wakeAt, w.Until)
		}
	}
	p.initDone = len(in.pod.GetSpec().GetInitContainers()) == 0
	if cur == nil && !p.sandbox.create {
		return p // no sandbox: nothing runs yet
	}
	scope := newSandbox
	if cur != nil {
		scope = cur.ID
	}
	var initSteps []containerStep
	initSteps, p.initDone, p.initFailed = decideInit(in, scope)
	p.containers = append(p.containers, initSteps...)
	for _, c := range in.pod.GetSpec().GetContainers() {
		s := containerStep{c: c, do: stepWait, wait: &waiting{Reason: ReasonPodInitializing}}
		if p.initDone {
			cur, _ := in.state.latest(c.Name, "")
			s = decideApp(in, c, cur, scope)
		}
		p.containers = append(p.containers, s)
	}
	if cur != nil {
		for _, ec := range in.pod.GetSpec().GetEphemeralContainers() {
			p.containers = append(p.containers, decideEphemeral(in, ec, cur.ID))
		}
	}
	for _, s := range p.containers {
		if s.do == stepWait {
			p.wakeAt = earliest(p.wakeAt, s.wait.Until)
		}
	}
	return p
}

// currentSandbox picks the newest Ready sandbox whose network namespace
// still exists; the others are stale (stopped, or lost with a reboot).
func currentSandbox(in *syncInput) (*runtime.SandboxStatus, []runtime.SandboxStatus) {
	var cur *runtime.SandboxStatus
	var stale []runtime.SandboxStatus
	for i := range in.state.sandboxes {
		sb := &in.state.sandboxes[i]
		switch {
		case sb.State != runtime.SandboxReady || in.netnsGone[sb.ID]:
			stale = append(stale, *sb)
		case cur == nil:
			cur = sb
		case sb.CreatedAt.After(cur.CreatedAt):
			stale = append(stale, *cur)
			cur = sb
		default:
			stale = append(stale, *sb)
		}
	}
	return cur, stale
}

// decideSandbox: the pod needs a sandbox and has none.
func decideSandbox(in *syncInput) sandboxStep {
	if busy, until := in.sandboxBackoff.waitSinceUpdate(in.now); busy {
		return sandboxStep{wait: &waiting{Reason: "FailedCreatePodSandbox", Message: in.sandboxError, Until: until}}
	}
	if in.netReady != nil && !in.pod.GetSpec().GetHostNetwork() {
		return sandboxStep{refuse: "network plugin not ready: " + in.netReady.Error()}
	}
	attempt := uint32(0)
	for _, sb := range in.state.sandboxes {
		attempt = max(attempt, sb.Config.Attempt+1)
	}
	return sandboxStep{create: true, attempt: attempt}
}

// needsRun reports whether some container still has to run, so the pod
// needs a sandbox.
func needsRun(pod *v1.Pod, st *podState) bool {
	for _, c := range pod.GetSpec().GetContainers() {
		cur, _ := st.latest(c.Name, "")
		if cur == nil || cur.State != runtime.ContainerExited || containerShouldRestart(c, pod.GetSpec(), cur.ExitCode) {
			return true
		}
	}
	return false
}

func shouldRestart(policy string, exitCode int) bool {
	switch policy {
	case "Never":
		return false
	case "OnFailure":
		return exitCode != 0
	}
	return true
}

// decideInit runs the init containers one after the other, each to a
// successful exit — a sidecar (restartPolicy Always) only to started, and
// kept running after: the steps for the sidecars reached so far (start,
// restart, kill) and for the first init container not done (none while
// it runs), whether all are done, and whether the pod failed for good (a
// regular one failed under restartPolicy Never).
func decideInit(in *syncInput, scope string) (steps []containerStep, done, failed bool) {
	inits := in.pod.GetSpec().GetInitContainers()
	for i, c := range inits {
		cur, _ := in.state.latest(c.Name, scope)
		if isSidecar(c) {
			steps = append(steps, decideSidecar(in, c, cur, scope))
			if !sidecarStarted(in, c, cur) && !startedAfter(in, inits[i+1:], scope) {
				return steps, false, false
			}
			continue
		}
		switch {
		case cur == nil:
			return append(steps, containerStep{c: c, init: true, do: stepStart, attempt: nextAttempt(in, c.Name)}), false, false
		case cur.State == runtime.ContainerCreated:
			return append(steps, containerStep{c: c, init: true, do: stepStartCreated, cur: cur}), false, false
		case cur.State == runtime.ContainerRunning, cur.State == runtime.ContainerUnknown:
			return steps, false, false
		case cur.ExitCode == 0:
			continue
		case !initShouldRestart(c, in.pod.GetSpec(), cur.ExitCode):
			return steps, false, true
		}
		s := restartStep(in, c, cur)
		s.init, s.restart = true, false
		return append(steps, s), false, false
	}
	return steps, true, false
}

// decideApp is the step for app container c whose latest attempt is cur,
// with the pod's sandbox scope (its ID, or newSandbox): start it, restart
// it per restartPolicy under the crash back-off, start one left created,
// or kill one that runs but must not (failed liveness or startup probe,
// changed image).
func decideApp(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus, scope string) containerStep {
	if cur == nil {
		return containerStep{c: c, do: stepStart, attempt: nextAttempt(in, c.Name)}
	}
	if cur.SandboxID == scope {
		switch cur.State {
		case runtime.ContainerCreated:
			return containerStep{c: c, do: stepStartCreated, cur: cur}
		case runtime.ContainerUnknown:
			return containerStep{c: c, cur: cur}
		case runtime.ContainerRunning:
			if reason := killReason(in, c, cur); reason != "" {
				return containerStep{c: c, do: stepKill, cur: cur, killReason: reason}
			}
			return containerStep{c: c, cur: cur}
		}
	}
	return afterExit(in, c, cur)
}

// afterExit is the step for app container c whose latest attempt cur
// exited (or is in an old sandbox, which is stopped): restart it per
// restartPolicy under the crash back-off, or leave it. A kill's follow-up
// is decided by it too, on the killed container's state after the kill
// (how it exited decides: restartPolicy OnFailure and exit code 0).
func afterExit(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus) containerStep {
	exit := cur.ExitCode
	if cur.State != runtime.ContainerExited {
		exit = 255
	}
	if podSidecar(in.pod, c) {
		if appsFinished(in) {
			return containerStep{c: c, init: true, cur: cur} // the pod is done: not restarted
		}
		s := restartStep(in, c, cur)
		s.init = true
		return s
	}
	if !containerShouldRestart(c, in.pod.GetSpec(), exit) {
		return containerStep{c: c, cur: cur}
	}
	return restartStep(in, c, cur)
}

// restartStep restarts an exited container, or makes it wait in
// CrashLoopBackOff until its back-off ends.
func restartStep(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus) containerStep {
	finished := cur.FinishedAt
	if finished.IsZero() {
		finished = in.now
	}
	b := in.crash[c.Name]
	if busy, until := b.waitSince(finished, in.now); busy {
		return containerStep{c: c, do: stepWait, cur: cur, wait: &waiting{Reason: ReasonCrashLoopBackOff,
			Message: crashLoopMessage(in.pod, c.Name, b.Delay), Until: until}}
	}
	return containerStep{c: c, do: stepStart, cur: cur, attempt: nextAttempt(in, c.Name), backoffFrom: finished, restart: true}
}

// killReason says why a running container must be killed, or "".
func killReason(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus) string {
	if img, ok := cur.Labels[LabelSpecImage]; ok && img != c.Image {
		return killImageChanged
	}
	r := in.probes[c.Name]
	if c.StartupProbe != nil && r.startup.ContainerID == cur.ID && r.startup.State == prober.Failure {
		return killStartup
	}
	if c.LivenessProbe != nil && r.liveness.ContainerID == cur.ID && r.liveness.State == prober.Failure {
		return killLiveness
	}
	if needsRestart(in, c, cur) {
		return killResize
	}
	return ""
}

// nextAttempt numbers a container's next attempt (its restart count):
// one more than any attempt the runtime has, or than the last status
// showed when the runtime lost them all (a wiped node).
func nextAttempt(in *syncInput, name string) uint32 {
	if as := in.state.attempts(name, ""); len(as) > 0 {
		return as[0].Attempt + 1
	}
	for _, cs := range append(append([]*v1.ContainerStatus{}, in.status.GetInitContainerStatuses()...), in.status.GetContainerStatuses()...) {
		if cs.Name == name && cs.ContainerId != "" {
			return uint32(cs.RestartCount) + 1
		}
	}
	return 0
}

// terminationGrace is how long containers get after the stop signal: the
// grace period of the deletion, else the pod's; a pod the API dropped
// without one (a forced delete) gets at most 2 s.
func terminationGrace(pod *v1.Pod, deleted bool) time.Duration {
	m := pod.GetMetadata()
	if m.GetDeletionTimestamp() != nil {
		return time.Duration(m.GetDeletionGracePeriodSeconds()) * time.Second
	}
	g := podGrace(pod)
	if deleted {
		g = min(g, 2*time.Second)
	}
	return g
}

// podGrace is the pod's termination grace period.
func podGrace(pod *v1.Pod) time.Duration {
	if g := pod.GetSpec().TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// deadline returns when the pod's spec.activeDeadlineSeconds runs out,
// counted from status.startTime; zero if it has none (or has not started).
func deadline(pod *v1.Pod, status *v1.PodStatus) time.Time {
	d := pod.GetSpec().ActiveDeadlineSeconds
	start := status.GetStartTime()
	if d == nil || start == nil {
		return time.Time{}
	}
	return start.AsTime().Add(time.Duration(*d) * time.Second)
}

// earliest is the earlier of a and t, ignoring a zero t.
func earliest(a, t time.Time) time.Time {
	if !t.IsZero() && t.Before(a) {
		return t
	}
	return a
}
