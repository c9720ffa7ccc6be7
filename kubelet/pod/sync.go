package pod

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// volumeRefresh is how often configMap and secret volumes are rewritten
// from the API while a pod runs.
const volumeRefresh = time.Minute

// sync converges the pod one step towards its spec and publishes its
// status. It is level-triggered: everything it decides comes from the
// runtime's current state, the latest pod object, probe results and the
// back-offs, so running it again is always safe.
func (w *worker) sync(ctx context.Context) syncResult {
	pod, deleted := w.snapshot()
	if deleted || pod.GetMetadata().GetDeletionTimestamp() != nil {
		if err := w.terminate(ctx, pod, deleted); err != nil {
			if ctx.Err() == nil {
				w.log.Warn("terminating pod", "err", err)
			}
			return syncResult{after: 2 * time.Second}
		}
		return syncResult{done: true}
	}
	st, err := w.observe(ctx)
	if err != nil {
		if ctx.Err() == nil {
			w.log.Warn("reading the pod's containers from the runtime", "err", err)
		}
		return syncResult{after: 2 * time.Second}
	}
	if IsTerminal(w.status.GetPhase()) {
		return w.syncTerminal(ctx, pod, st)
	}
	if msg := w.takeEviction(); msg != "" {
		return w.evict(ctx, pod, msg)
	}
	if d := deadline(pod, w.status); !d.IsZero() && !w.m.now().Before(d) {
		w.log.Info("the pod's active deadline passed", "activeDeadlineSeconds", pod.GetSpec().GetActiveDeadlineSeconds())
		return w.fail(ctx, pod, ReasonDeadlineExceeded, MessageDeadlineExceeded)
	}

	next := w.m.now().Add(w.m.cfg.ResyncInterval)
	until := func(t time.Time) {
		if !t.IsZero() && t.Before(next) {
			next = t
		}
	}
	w.waiting = map[string]*waiting{}
	w.sandboxWait = nil

	sb, old := w.currentSandbox(st)
	if sb == nil && w.needsRun(pod, st) {
		sb = w.ensureSandbox(ctx, pod, st)
		if w.sandboxWait != nil {
			until(w.sandboxWait.Until)
		}
	}
	if sb != nil {
		for _, o := range old {
			if err := teardownSandbox(ctx, w.m.rt, w.m.net, o); err != nil {
				w.log.Warn("removing an old sandbox", "sandbox", o.ID, "err", err)
			}
		}
	}

	initDone := len(pod.GetSpec().GetInitContainers()) == 0
	initFailed := false
	if sb != nil {
		w.touched, w.removed = map[string]bool{}, map[string]bool{}
		vols, err := w.podVolumes(ctx, pod)
		if err != nil {
			w.m.rec.Eventf(pod, eventWarning, "FailedMount", "%v", err)
		}
		initDone, initFailed = w.syncInitContainers(ctx, pod, sb, st, vols, err, until)
		if initDone {
			w.syncAppContainers(ctx, pod, sb, st, vols, err, until)
		} else {
			for _, c := range pod.GetSpec().GetContainers() {
				w.waiting[c.Name] = &waiting{Reason: ReasonPodInitializing}
			}
		}
		// A new sandbox whose containers all wait (for an image, say) is
		// reported only once its network is up (or failed).
		if !w.networkUp(ctx, pod, sb) {
			sb = nil
			if w.sandboxWait != nil {
				until(w.sandboxWait.Until)
			}
		}
		w.refresh(ctx, st)
	}

	w.m.seen(w.uid, st)
	if sb != nil && w.needsFollowUp(pod, st, sb.ID) {
		next = w.m.now() // act at once on what this sync's refresh saw
	}
	status := w.computeStatus(pod, st, sb, initDone, initFailed)
	if IsTerminal(status.Phase) {
		w.publish(pod, status)
		return w.syncTerminal(ctx, pod, st)
	}
	until(deadline(pod, status)) // woken to fail it on time
	w.publish(pod, status)
	return syncResult{after: max(next.Sub(w.m.now()), 10*time.Millisecond)}
}

// refresh re-reads the containers this sync created, started or killed
// (one status call each, instead of listing every task of the node again)
// and forgets the ones it removed.
func (w *worker) refresh(ctx context.Context, st *podState) {
	if len(w.touched) == 0 && len(w.removed) == 0 {
		return
	}
	kept := st.containers[:0]
	for _, c := range st.containers {
		if !w.removed[c.ID] && !w.touched[c.ID] {
			kept = append(kept, c)
		}
	}
	st.containers = kept
	for id := range w.touched {
		cs, err := w.m.rt.ContainerStatus(ctx, id)
		if err != nil {
			continue // removed meanwhile, or the runtime is down: the next sync sees
		}
		st.containers = append(st.containers, cs)
	}
}

// needsFollowUp reports whether a container is in a state the next sync
// acts on without waiting — it exited (or never started) and nothing this
// sync decided makes it wait. The relist does not wake the worker for
// those: the worker has seen them itself.
func (w *worker) needsFollowUp(pod *v1.Pod, st *podState, sandboxID string) bool {
	policy := pod.GetSpec().GetRestartPolicy()
	check := func(c *v1.Container, scope string, init bool) bool {
		if wt := w.waiting[c.Name]; wt != nil && wt.Reason != ReasonPodInitializing {
			return false
		}
		cur, _ := st.latest(c.Name, scope)
		switch {
		case cur == nil, cur.State == runtime.ContainerCreated:
			return true
		case cur.State != runtime.ContainerExited:
			return false
		case init:
			return cur.ExitCode == 0 || policy != "Never"
		}
		return shouldRestart(policy, cur.ExitCode)
	}
	for _, c := range pod.GetSpec().GetInitContainers() {
		cur, _ := st.latest(c.Name, sandboxID)
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

// currentSandbox picks the newest Ready sandbox whose network namespace
// still exists; the others are stale (stopped, or lost with a reboot).
func (w *worker) currentSandbox(st *podState) (*sandboxInfo, []runtime.SandboxStatus) {
	var cur *runtime.SandboxStatus
	var old []runtime.SandboxStatus
	for i := range st.sandboxes {
		sb := &st.sandboxes[i]
		if sb.State != runtime.SandboxReady || !sb.Config.HostNetwork && !w.m.net.NetNSExists(sb.Config.NetNSPath) {
			old = append(old, *sb)
			continue
		}
		if cur == nil || sb.CreatedAt.After(cur.CreatedAt) {
			if cur != nil {
				old = append(old, *cur)
			}
			cur = sb
		} else {
			old = append(old, *sb)
		}
	}
	if cur == nil {
		return nil, old
	}
	info := &sandboxInfo{SandboxStatus: *cur}
	if cur.Config.HostNetwork {
		info.IP = w.m.cfg.NodeIP
	} else if ip, ok := w.ips[cur.ID]; ok {
		info.IP, _ = parseAddr(ip)
	} else if ip, ok := w.m.net.PodIP(podNetwork(cur.ID, cur.Config.NetNSPath, cur.Config.Pod, nil)); ok {
		info.IP = ip
		w.ips[cur.ID] = ip.String()
	} else if ip, err := parseAddr(w.status.GetPodIp()); err == nil {
		info.IP = ip
	}
	return info, old
}

// needsRun reports whether some container still has to run, so the pod
// needs a sandbox.
func (w *worker) needsRun(pod *v1.Pod, st *podState) bool {
	policy := pod.GetSpec().GetRestartPolicy()
	for _, c := range pod.GetSpec().GetContainers() {
		cur, _ := st.latest(c.Name, "")
		if cur == nil || cur.State != runtime.ContainerExited || shouldRestart(policy, cur.ExitCode) {
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

// ensureSandbox makes the pod's sandbox, or records why it cannot yet.
func (w *worker) ensureSandbox(ctx context.Context, pod *v1.Pod, st *podState) *sandboxInfo {
	key := w.uid + "/sandbox"
	if busy, until := w.m.sandboxBackoff.inBackoffSinceUpdate(key); busy {
		w.sandboxWait = &waiting{Reason: "FailedCreatePodSandbox", Message: w.lastSandboxError(), Until: until}
		return nil
	}
	if err := w.m.net.Ready(); err != nil && !pod.GetSpec().GetHostNetwork() {
		msg := fmt.Sprintf("network plugin not ready: %v", err)
		w.m.rec.Eventf(pod, eventWarning, "FailedCreatePodSandbox", "Failed to create pod sandbox: %s", msg)
		w.m.sandboxBackoff.next(key, w.m.now())
		w.setSandboxError(msg)
		_, until := w.m.sandboxBackoff.inBackoffSinceUpdate(key)
		w.sandboxWait = &waiting{Reason: "NetworkNotReady", Message: msg, Until: until}
		return nil
	}
	attempt := uint32(0)
	for _, sb := range st.sandboxes {
		attempt = max(attempt, sb.Config.Attempt+1)
	}
	sb, err := w.createSandbox(ctx, pod, attempt)
	if err != nil {
		w.sandboxFailed(pod, err)
		return nil
	}
	w.m.sandboxBackoff.reset(key)
	return sb
}

// sandboxFailed records a sandbox that could not be made: event, back-off,
// and the reason the pod's status shows.
func (w *worker) sandboxFailed(pod *v1.Pod, err error) {
	key := w.uid + "/sandbox"
	reason := "FailedCreatePodSandbox"
	if errors.Is(err, network.ErrNotReady) {
		reason = "NetworkNotReady"
	}
	w.m.rec.Eventf(pod, eventWarning, "FailedCreatePodSandbox", "Failed to create pod sandbox: %v", err)
	w.m.sandboxBackoff.next(key, w.m.now())
	w.setSandboxError(err.Error())
	_, until := w.m.sandboxBackoff.inBackoffSinceUpdate(key)
	w.sandboxWait = &waiting{Reason: reason, Message: err.Error(), Until: until}
}

func (w *worker) setSandboxError(msg string) {
	w.m.mu.Lock()
	w.m.sandboxErrors[w.uid] = msg
	w.m.mu.Unlock()
}

func (w *worker) lastSandboxError() string {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.m.sandboxErrors[w.uid]
}

// podVolumes prepares the pod's volumes, again after volumeRefresh (so
// configMap and secret contents follow their objects).
func (w *worker) podVolumes(ctx context.Context, pod *v1.Pod) (map[string]string, error) {
	if w.volumes != nil && w.m.now().Sub(w.volumesAt) < volumeRefresh {
		return w.volumes, nil
	}
	vols, err := prepareVolumes(ctx, w.m.cfg, w.m.src, pod)
	if err != nil {
		return w.volumes, err
	}
	w.volumes, w.volumesAt = vols, w.m.now()
	return vols, nil
}

// computeStatus renders the status from the runtime's state and this
// sync's verdicts.
func (w *worker) computeStatus(pod *v1.Pod, st *podState, sb *sandboxInfo, initDone, initFailed bool) *v1.PodStatus {
	sbID := ""
	podIP := w.status.GetPodIp()
	if sb != nil {
		sbID = sb.ID
		if sb.IP.IsValid() {
			podIP = sb.IP.String()
		}
	}
	prevByName := map[string]*v1.ContainerStatus{}
	for _, cs := range append(append([]*v1.ContainerStatus{}, w.status.GetInitContainerStatuses()...), w.status.GetContainerStatuses()...) {
		prevByName[cs.Name] = cs
	}
	var targets []prober.Target
	view := func(c *v1.Container, scope string) containerView {
		cur, prev := st.latest(c.Name, scope)
		v := containerView{spec: c, cur: cur, prev: prev, waiting: w.waiting[c.Name]}
		if cur != nil && cur.State == runtime.ContainerRunning && cur.SandboxID == sbID {
			v.ready, v.started = w.readiness(c, cur, prevByName[c.Name])
			targets = append(targets, prober.Target{Name: c.Name, ContainerID: cur.ID, StartedAt: cur.StartedAt})
		}
		return v
	}
	in := statusInput{
		pod: pod, prev: w.status, now: w.m.now(), accepted: w.accepted,
		hostIP: w.m.cfg.NodeIP.String(), podIP: podIP,
		sandboxReady: sb != nil, sandboxWaiting: w.sandboxWait,
		initDone: initDone, initFailed: initFailed,
	}
	for _, c := range pod.GetSpec().GetInitContainers() {
		in.init = append(in.init, view(c, sbID))
	}
	for _, c := range pod.GetSpec().GetContainers() {
		in.app = append(in.app, view(c, ""))
	}
	if sb != nil {
		w.m.prober.UpdatePod(pod, podIP, targets)
	}
	return buildStatus(in)
}

// readiness says whether a running container is ready and started. Until
// its probes have a verdict, a container keeps what the previous status
// said about the same container (a restarted kubelet does not flap Ready).
func (w *worker) readiness(c *v1.Container, cur *runtime.ContainerStatus, prev *v1.ContainerStatus) (ready, started bool) {
	samePrev := prev != nil && prev.ContainerId == containerIDPrefix+cur.ID
	started = true
	if c.StartupProbe != nil {
		r := w.m.prober.Result(w.uid, c.Name, prober.Startup)
		started = (r.ContainerID == cur.ID && r.State == prober.Success) ||
			(r.State == prober.Unknown && samePrev && prev.Started)
	}
	ready = started
	if c.ReadinessProbe != nil {
		r := w.m.prober.Result(w.uid, c.Name, prober.Readiness)
		switch {
		case r.ContainerID == cur.ID && r.State == prober.Success:
		case r.State == prober.Unknown && samePrev && prev.Ready:
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
