package pod

import (
	"context"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// volumeRefresh is how often configMap and secret volumes are rewritten
// from the API while a pod runs.
const volumeRefresh = time.Minute

// sync converges the pod one step towards its spec and publishes its
// status: it observes (the runtime's state, then the rest of the
// syncInput), decides (decide, pure), and does what the plan says. It is
// level-triggered: everything it decides comes from current state, so
// running it again is always safe.
func (w *worker) sync(ctx context.Context) syncResult {
	pod, deleted := w.snapshot()
	st, err := w.observe(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("reading the pod's containers from the runtime", "err", err)
		}
		return syncResult{after: 2 * time.Second}
	}
	in := w.input(pod, deleted, st)
	in.alloc, in.resizePending = w.m.allocate(pod)
	in.applied = w.applied
	p := decide(in)
	switch p.action {
	case actTerminate:
		return w.terminate(ctx, in, p)
	case actTerminal:
		return w.syncTerminal(ctx, pod, st)
	case actFail:
		return w.fail(ctx, in, p)
	}
	r := &syncRun{w: w, in: in, plan: p, next: p.wakeAt, waiting: map[string]*waiting{},
		touched: map[string]bool{}, removed: map[string]bool{}}
	return r.run(ctx)
}

type syncResult struct {
	after time.Duration
	done  bool
}

// syncRun is one sync carrying out an actRun plan, and what came of it:
// made fresh for each sync, gone when it returns.
type syncRun struct {
	w    *worker
	in   *syncInput
	plan *plan

	// sb is the sandbox the containers run in: the current one, or the
	// one this sync made (nil: none).
	sb *sandboxInfo
	// sandboxWait says why there is no sandbox.
	sandboxWait *waiting
	// waiting is why each container does not run (yet), by name: the
	// plan's waits and what doing it ran into (an image, a config error).
	waiting map[string]*waiting
	// touched are the containers this sync created, started or killed;
	// removed the ones it removed.
	touched, removed map[string]bool
	// next is when the worker must sync again at the latest.
	next time.Time
	// resizeInProgress: a running container does not yet run with its
	// allocation; resizeError says why, if applying it failed.
	resizeInProgress bool
	resizeError      string
}

func (r *syncRun) wakeAt(t time.Time) { r.next = earliest(r.next, t) }

func (r *syncRun) run(ctx context.Context) syncResult {
	w, pod, p := r.w, r.in.pod, r.plan
	// A new sandbox takes the runtime a while (pause container, CNI):
	// the volumes are prepared meanwhile (API reads of configMaps,
	// secrets and tokens, files written), so they are ready when the
	// sandbox is, as in Kubernetes, where they are mounted before the
	// sandbox is made.
	var prep *volumeJob
	if p.sandbox.create {
		if prep = w.volumeJob(ctx, pod); prep != nil {
			go prep.run()
		}
	}
	r.doSandbox(ctx)
	if r.sb == nil && prep != nil {
		// No sandbox: reported as before (no FailedMount; the volumes
		// are prepared again with the next sandbox), the preparation
		// cut short; volumes it did prepare are kept.
		prep.cancel()
		_, _ = w.volumesDone(prep)
	}
	if r.sb != nil {
		for _, o := range p.stale {
			if err := teardownSandbox(ctx, w.m.rt, w.m.net, o); err != nil {
				w.log.Warn("removing an old sandbox", "sandbox", o.ID, "err", err)
			}
		}
		vols, volErr := w.podVolumes(ctx, pod, prep)
		if volErr != nil {
			w.m.rec.Eventf(pod, eventWarning, "FailedMount", "%v", volErr)
		}
		r.doContainers(ctx, vols, volErr)
		r.resizeInProgress, r.resizeError = r.resizeInPlace(ctx)
		// A new sandbox whose containers all wait (for an image, say) is
		// reported only once its network is up (or failed).
		if !r.networkUp(ctx) {
			r.sb = nil
		}
		r.refresh(ctx)
	}
	st := r.in.state
	w.m.seen(w.uid, st)
	if r.sb != nil && needsFollowUp(r.in, r.sb.ID, r.waiting) {
		r.next = w.m.now() // act at once on what this sync's refresh saw
	}
	status, targets := r.status()
	if r.sb != nil {
		w.m.prober.UpdatePod(pod, status.PodIp, targets)
	}
	if IsTerminal(status.Phase) {
		if hasSidecar(pod) {
			// The app containers are done: the sidecars are stopped
			// (preStop, stop signal, grace; in reverse order) before the
			// pod is reported finished, with their final states.
			w.m.prober.RemovePod(w.uid)
			if err := w.stopContainers(ctx, pod, st, podGrace(pod)); err != nil {
				w.log.Warn("stopping the sidecars of a finished pod", "err", err)
				return syncResult{after: 2 * time.Second}
			}
			w.status = status // terminal from now on; syncTerminal publishes it
			return w.syncTerminal(ctx, pod, st)
		}
		w.publish(pod, status)
		return w.syncTerminal(ctx, pod, st)
	}
	r.wakeAt(deadline(pod, status)) // woken to fail it on time
	w.publish(pod, status)
	return syncResult{after: max(r.next.Sub(w.m.now()), 10*time.Millisecond)}
}

// doContainers carries out the container steps, in order. A kill's
// follow-up is decided after it, on the container's state then
// (afterExit); a sandbox whose network fails ends the steps.
func (r *syncRun) doContainers(ctx context.Context, vols map[string]string, volErr error) {
	w := r.w
	for _, s := range r.plan.containers {
		if s.do == stepKill {
			fresh, ok := r.kill(ctx, s)
			if !ok {
				continue
			}
			s = afterExit(r.in, s.c, fresh)
		}
		switch s.do {
		case stepWait:
			r.waiting[s.c.Name] = s.wait
			if s.wait.Reason == ReasonCrashLoopBackOff {
				w.m.rec.Eventf(r.in.pod, eventWarning, "BackOff", "Back-off restarting failed container %s in pod %s", s.c.Name, r.in.pod.GetMetadata().GetName())
			}
		case stepStartCreated:
			r.startCreated(ctx, s.c, s.cur)
		case stepStart:
			if !s.backoffFrom.IsZero() {
				w.m.crashBackoff.next(w.uid+"/"+s.c.Name, s.backoffFrom)
			}
			if s.restart {
				w.m.metrics.restarts.Inc()
			}
			r.start(ctx, s, vols, volErr)
			if r.sb.failed {
				return
			}
		}
	}
}

// refresh re-reads the containers this sync created, started or killed
// (one status call each, instead of listing every task of the node again)
// and forgets the ones it removed.
func (r *syncRun) refresh(ctx context.Context) {
	if len(r.touched) == 0 && len(r.removed) == 0 {
		return
	}
	st := r.in.state
	kept := st.containers[:0]
	for _, c := range st.containers {
		if !r.removed[c.ID] && !r.touched[c.ID] {
			kept = append(kept, c)
		}
	}
	st.containers = kept
	for id := range r.touched {
		cs, err := r.w.m.rt.ContainerStatus(ctx, id)
		if err != nil {
			continue // removed meanwhile, or the runtime is down: the next sync sees
		}
		st.containers = append(st.containers, cs)
	}
	r.w.fillTerminationMessages(r.in.pod, st.containers)
}

// needsFollowUp reports whether a container is in a state the next sync
// acts on without waiting — it exited (or never started) and nothing this
// sync decided makes it wait. The relist does not wake the worker for
// those: the worker has seen them itself.
func needsFollowUp(in *syncInput, sandboxID string, waiting map[string]*waiting) bool {
	pod, st := in.pod, in.state
	check := func(c *v1.Container, scope string, init bool) bool {
		if wt := waiting[c.Name]; wt != nil && wt.Reason != ReasonPodInitializing {
			return false
		}
		cur, _ := st.latest(c.Name, scope)
		switch {
		case cur == nil, cur.State == runtime.ContainerCreated:
			return true
		case cur.State != runtime.ContainerExited:
			return false
		case init && isSidecar(c):
			return !appsFinished(in)
		case init:
			return cur.ExitCode == 0 || initShouldRestart(c, pod.GetSpec(), cur.ExitCode)
		}
		return containerShouldRestart(c, pod.GetSpec(), cur.ExitCode)
	}
	inits := pod.GetSpec().GetInitContainers()
	for i, c := range inits {
		cur, _ := st.latest(c.Name, sandboxID)
		if isSidecar(c) {
			if check(c, sandboxID, true) {
				return true
			}
			if !sidecarStarted(in, c, cur) && !startedAfter(in, inits[i+1:], sandboxID) {
				return false // the next ones wait for it
			}
			continue
		}
		if cur == nil || cur.State != runtime.ContainerExited || cur.ExitCode != 0 {
			return check(c, sandboxID, true) // the first init container not done
		}
	}
	for _, c := range pod.GetSpec().GetContainers() {
		if check(c, "", false) {
			return true
		}
	}
	return false
}

// podVolumes prepares the pod's volumes, again after volumeRefresh (so
// configMap and secret contents follow their objects, and tokens are
// renewed) and at once when the pod's labels or annotations change (its
// downward API files). job, if not nil, is that preparation already
// running in the background (volumeJob): podVolumes waits for it. On an
// error it returns the volumes prepared last (if any) with the error.
func (w *worker) podVolumes(ctx context.Context, pod *v1.Pod, job *volumeJob) (map[string]string, error) {
	if job == nil {
		if job = w.volumeJob(ctx, pod); job == nil {
			return w.volumes, nil
		}
		job.run()
	}
	return w.volumesDone(job)
}

// volumeJob is one preparation of a pod's volumes (prepareVolumes), which
// may run in a goroutine of its own while the worker makes the sandbox.
// Only the worker's goroutine reads its result (volumesDone), so the
// worker's fields stay its own.
type volumeJob struct {
	w    *worker
	pod  *v1.Pod
	meta string // the labels and annotations it prepares for
	// ctx is the preparation's (its API reads); cancel aborts it.
	ctx    context.Context
	cancel context.CancelFunc
	// done is closed when run has returned, with vols and err set.
	done chan struct{}
	vols map[string]string
	err  error
}

// volumeJob returns a preparation of the pod's volumes under ctx, not
// started, or nil when the ones prepared last are current.
func (w *worker) volumeJob(ctx context.Context, pod *v1.Pod) *volumeJob {
	meta := formatMap(pod.GetMetadata().GetLabels()) + "\x00" + formatMap(pod.GetMetadata().GetAnnotations())
	if w.volumes != nil && w.m.now().Sub(w.volumesAt) < volumeRefresh && meta == w.volumesMeta {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	return &volumeJob{w: w, pod: pod, meta: meta, ctx: ctx, cancel: cancel, done: make(chan struct{})}
}

// run prepares the volumes and closes done.
func (j *volumeJob) run() {
	defer close(j.done)
	start := time.Now()
	j.vols, j.err = prepareVolumes(j.ctx, j.w.m.cfg, j.w.m.src, j.pod)
	logStep(j.w.log, "volumes prepared", start, j.err)
}

// volumesDone waits for job and keeps what it prepared as the pod's
// volumes; on an error it returns the volumes prepared last (if any)
// with the error.
func (w *worker) volumesDone(job *volumeJob) (map[string]string, error) {
	<-job.done
	job.cancel()
	if job.err != nil {
		return w.volumes, job.err
	}
	w.volumes, w.volumesAt, w.volumesMeta = job.vols, w.m.now(), job.meta
	return job.vols, nil
}

// status renders the pod's status from the runtime's state (as refreshed)
// and what this sync decided and ran into, and lists the running
// containers for the prober.
func (r *syncRun) status() (*v1.PodStatus, []prober.Target) {
	w, in := r.w, r.in
	sbID := ""
	podIP := in.status.GetPodIp()
	if r.sb != nil {
		sbID = r.sb.ID
		if r.sb.IP.IsValid() {
			podIP = r.sb.IP.String()
		}
	}
	prevByName := map[string]*v1.ContainerStatus{}
	for _, cs := range append(append([]*v1.ContainerStatus{}, in.status.GetInitContainerStatuses()...), in.status.GetContainerStatuses()...) {
		prevByName[cs.Name] = cs
	}
	var targets []prober.Target
	view := func(c *v1.Container, scope string) containerView {
		cur, prev := in.state.latest(c.Name, scope)
		v := containerView{spec: c, cur: cur, prev: prev, waiting: r.waiting[c.Name]}
		if cur != nil && cur.State == runtime.ContainerRunning && cur.SandboxID == sbID {
			v.ready, v.started = readiness(c, cur, prevByName[c.Name], in.probes[c.Name])
			targets = append(targets, prober.Target{Name: c.Name, ContainerID: cur.ID, StartedAt: cur.StartedAt})
		}
		return v
	}
	s := statusInput{
		pod: in.pod, prev: in.status, now: w.m.now(), accepted: w.accepted,
		hostIP: w.m.cfg.NodeIP.String(), podIP: podIP,
		sandboxReady: r.sb != nil, sandboxWaiting: r.sandboxWait,
		initDone: r.plan.initDone, initFailed: r.plan.initFailed,
		alloc: in.alloc, applied: w.applied,
		resizePending: in.resizePending, resizeInProgress: r.resizeInProgress, resizeError: r.resizeError,
	}
	for _, c := range in.pod.GetSpec().GetInitContainers() {
		s.init = append(s.init, view(c, sbID))
	}
	for _, c := range in.pod.GetSpec().GetContainers() {
		s.app = append(s.app, view(c, ""))
	}
	s.ephemeral = ephemeralViews(in.pod, in.state, r.waiting)
	return buildStatus(s), targets
}

// readiness says whether a running container is ready and started. Until
// its probes have a verdict, a container keeps what the previous status
// said about the same container (a restarted kubelet does not flap Ready).
func readiness(c *v1.Container, cur *runtime.ContainerStatus, prev *v1.ContainerStatus, r probeResults) (ready, started bool) {
	samePrev := prev != nil && prev.ContainerId == containerIDPrefix+cur.ID
	started = true
	if c.StartupProbe != nil {
		started = (r.startup.ContainerID == cur.ID && r.startup.State == prober.Success) ||
			(r.startup.State == prober.Unknown && samePrev && prev.Started)
	}
	ready = started
	if c.ReadinessProbe != nil {
		switch {
		case r.readiness.ContainerID == cur.ID && r.readiness.State == prober.Success:
		case r.readiness.State == prober.Unknown && samePrev && prev.Ready:
		default:
			ready = false
		}
	}
	return ready, started
}

// syncTerminal keeps a finished pod finished: its containers stopped and
// its network released, its status final.
func (w *worker) syncTerminal(ctx context.Context, pod *v1.Pod, st *podState) syncResult {
	if !w.released {
		w.m.prober.RemovePod(w.uid)
		for _, sb := range st.sandboxes {
			if err := releaseSandbox(ctx, w.m.rt, w.m.net, sb); err != nil {
				w.log.Warn("releasing a finished pod's sandbox", "sandbox", sb.ID, "err", err)
				return syncResult{after: 2 * time.Second}
			}
		}
		w.released = true
		if fresh, err := w.observe(ctx); err == nil {
			st = fresh
		}
	}
	in := statusInput{
		pod: pod, prev: w.status, now: w.m.now(), accepted: w.accepted,
		hostIP: w.m.cfg.NodeIP.String(), podIP: w.status.GetPodIp(),
		networkReleased: true, initDone: true,
	}
	for _, c := range pod.GetSpec().GetInitContainers() {
		cur, prev := st.latest(c.Name, "")
		in.init = append(in.init, containerView{spec: c, cur: cur, prev: prev})
	}
	for _, c := range pod.GetSpec().GetContainers() {
		cur, prev := st.latest(c.Name, "")
		in.app = append(in.app, containerView{spec: c, cur: cur, prev: prev})
	}
	in.ephemeral = ephemeralViews(pod, st, nil)
	w.publish(pod, buildStatus(in))
	return syncResult{after: 10 * w.m.cfg.ResyncInterval}
}

// publish hands the status to the status manager (which writes it to the
// API in the background) and records it as the worker's own.
func (w *worker) publish(pod *v1.Pod, status *v1.PodStatus) {
	w.status = status
	w.m.status.set(pod, status)
	if !w.startTimed && status.Phase == PhaseRunning && allRunning(status) {
		w.startTimed = true
		w.m.metrics.podStart.Observe(w.m.now().Sub(w.accepted).Seconds())
	}
}

func allRunning(s *v1.PodStatus) bool {
	for _, cs := range s.ContainerStatuses {
		if cs.GetState().GetRunning() == nil {
			return false
		}
	}
	return len(s.ContainerStatuses) > 0
}
