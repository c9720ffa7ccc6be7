package pod

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// syncInitContainers runs the init containers one after the other, each
// to a successful exit. It reports whether all are done and whether the
// pod failed for good (an init container failed under restartPolicy
// Never).
func (w *worker) syncInitContainers(ctx context.Context, pod *v1.Pod, sb *sandboxInfo, st *podState, vols map[string]string, volErr error, until func(time.Time)) (done, failed bool) {
	policy := pod.GetSpec().GetRestartPolicy()
	for _, c := range pod.GetSpec().GetInitContainers() {
		cur, _ := st.latest(c.Name, sb.ID)
		switch {
		case cur == nil:
			w.startContainer(ctx, pod, sb, st, c, w.nextAttempt(pod, st, c.Name), true, vols, volErr, until)
			return false, false
		case cur.State == runtime.ContainerCreated:
			w.startCreated(ctx, pod, c, cur)
			return false, false
		case cur.State == runtime.ContainerRunning, cur.State == runtime.ContainerUnknown:
			return false, false
		case cur.ExitCode == 0:
			continue
		case policy == "Never":
			return false, true
		default:
			if !w.restartAfterBackoff(pod, c, cur, until) {
				return false, false
			}
			w.startContainer(ctx, pod, sb, st, c, w.nextAttempt(pod, st, c.Name), true, vols, volErr, until)
			return false, false
		}
	}
	return true, false
}

// syncAppContainers starts, restarts (per restart policy, with back-off)
// and kills (failed liveness or startup probe, changed image) the pod's
// containers, in spec order.
func (w *worker) syncAppContainers(ctx context.Context, pod *v1.Pod, sb *sandboxInfo, st *podState, vols map[string]string, volErr error, until func(time.Time)) {
	policy := pod.GetSpec().GetRestartPolicy()
	for _, c := range pod.GetSpec().GetContainers() {
		cur, _ := st.latest(c.Name, "")
		if cur != nil && cur.SandboxID == sb.ID {
			switch cur.State {
			case runtime.ContainerCreated:
				w.startCreated(ctx, pod, c, cur)
				continue
			case runtime.ContainerUnknown:
				continue
			case runtime.ContainerRunning:
				reason := w.killReason(c, cur)
				if reason == "" {
					continue
				}
				w.killContainer(ctx, pod, c, cur, reason)
				fresh, err := w.m.rt.ContainerStatus(ctx, cur.ID)
				if err != nil {
					continue
				}
				cur = &fresh
				if reason == killImageChanged {
					w.m.crashBackoff.reset(w.uid + "/" + c.Name)
				}
			}
		}
		// No container yet, or the latest one exited (or was in an old
		// sandbox, which is stopped).
		if cur != nil {
			exit := cur.ExitCode
			if cur.State != runtime.ContainerExited {
				exit = 255
			}
			if !shouldRestart(policy, exit) {
				continue
			}
			if !w.restartAfterBackoff(pod, c, cur, until) {
				continue
			}
			w.m.metrics.restarts.Inc()
		}
		w.startContainer(ctx, pod, sb, st, c, w.nextAttempt(pod, st, c.Name), false, vols, volErr, until)
		if sb.failed {
			return
		}
	}
}

const killImageChanged = "image changed"

// killReason says why a running container must be killed, or "".
func (w *worker) killReason(c *v1.Container, cur *runtime.ContainerStatus) string {
	if img, ok := cur.Labels[LabelSpecImage]; ok && img != c.Image {
		return killImageChanged
	}
	if c.StartupProbe != nil {
		if r := w.m.prober.Result(w.uid, c.Name, prober.Startup); r.ContainerID == cur.ID && r.State == prober.Failure {
			return "startup probe"
		}
	}
	if c.LivenessProbe != nil {
		if r := w.m.prober.Result(w.uid, c.Name, prober.Liveness); r.ContainerID == cur.ID && r.State == prober.Failure {
			return "liveness probe"
		}
	}
	return ""
}

func (w *worker) killContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, cur *runtime.ContainerStatus, reason string) {
	grace := podGrace(pod)
	msg := fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)
	if reason != killImageChanged {
		msg = fmt.Sprintf("Container %s failed %s, will be restarted", c.Name, reason)
		pr := c.LivenessProbe
		if reason == "startup probe" {
			pr = c.StartupProbe
		}
		if g := pr.GetTerminationGracePeriodSeconds(); pr != nil && pr.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(g) * time.Second
		}
	}
	w.m.rec.Eventf(pod, eventNormal, "Killing", "%s", msg)
	w.touched[cur.ID] = true
	if err := w.m.rt.StopContainer(ctx, cur.ID, grace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		w.log.Warn("killing container", "container", c.Name, "err", err)
	}
}

// restartAfterBackoff applies the crash back-off to an exited container:
// true if it may be restarted now; otherwise the container waits in
// CrashLoopBackOff.
func (w *worker) restartAfterBackoff(pod *v1.Pod, c *v1.Container, cur *runtime.ContainerStatus, until func(time.Time)) bool {
	key := w.uid + "/" + c.Name
	finished := cur.FinishedAt
	if finished.IsZero() {
		finished = w.m.now()
	}
	if busy, t := w.m.crashBackoff.inBackoffSince(key, finished); busy {
		delay := w.m.crashBackoff.delay(key)
		w.waiting[c.Name] = &waiting{Reason: ReasonCrashLoopBackOff, Message: crashLoopMessage(pod, c.Name, delay), Until: t}
		w.m.rec.Eventf(pod, eventWarning, "BackOff", "Back-off restarting failed container %s in pod %s", c.Name, pod.GetMetadata().GetName())
		until(t)
		return false
	}
	w.m.crashBackoff.next(key, finished)
	return true
}

// nextAttempt numbers a container's next attempt (its restart count):
// one more than any attempt the runtime has, or than the API last showed
// when the runtime lost them all (a wiped node).
func (w *worker) nextAttempt(pod *v1.Pod, st *podState, name string) uint32 {
	if as := st.attempts(name, ""); len(as) > 0 {
		return as[0].Attempt + 1
	}
	for _, cs := range append(append([]*v1.ContainerStatus{}, w.status.GetInitContainerStatuses()...), w.status.GetContainerStatuses()...) {
		if cs.Name == name && cs.ContainerId != "" {
			return uint32(cs.RestartCount) + 1
		}
	}
	return 0
}

// startContainer ensures the image, creates the container and starts it.
// Whatever stops it is recorded as the container's waiting reason.
func (w *worker) startContainer(ctx context.Context, pod *v1.Pod, sb *sandboxInfo, st *podState, c *v1.Container, attempt uint32, init bool, vols map[string]string, volErr error, until func(time.Time)) {
	if wt := w.m.images.ensure(ctx, pod, c); wt != nil {
		w.waiting[c.Name] = wt
		until(wt.Until)
		return
	}
	cfg, err := w.containerConfig(ctx, pod, c, sb, attempt, init, vols, volErr)
	if errors.Is(err, errSandboxFailed) {
		return
	}
	if err != nil {
		reason := ReasonCreateContainerError
		var ce *configError
		if errors.As(err, &ce) {
			reason = ReasonCreateContainerConfigError
		}
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: %v", err)
		w.waiting[c.Name] = &waiting{Reason: reason, Message: err.Error(), Until: w.m.now().Add(configRetry)}
		until(w.waiting[c.Name].Until)
		return
	}
	id, err := w.m.rt.CreateContainer(ctx, sb.ID, cfg)
	if errors.Is(err, runtime.ErrImageNotPresent) {
		w.m.images.setPresent(c.Image, false) // removed behind our back: ask again next time
	}
	if err != nil {
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: %v", err)
		w.waiting[c.Name] = &waiting{Reason: ReasonCreateContainerError, Message: err.Error(), Until: w.m.now().Add(configRetry)}
		until(w.waiting[c.Name].Until)
		return
	}
	w.touched[id] = true
	w.m.rec.Eventf(pod, eventNormal, "Created", "Created container %s", c.Name)
	if !w.networkUp(ctx, pod, sb) {
		return // the sandbox and this container are gone
	}
	if err := w.m.rt.StartContainer(ctx, id); err != nil {
		// The runtime records the failure (reason StartError): the next
		// sync restarts the container under the crash back-off.
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: failed to start container %q: %v", c.Name, err)
		return
	}
	w.m.rec.Eventf(pod, eventNormal, "Started", "Started container %s", c.Name)
	w.removeOldAttempts(ctx, st, c.Name, attempt)
}

// configRetry is how soon a container whose config could not be built
// (a missing ConfigMap, say) is tried again.
const configRetry = 5 * time.Second

// errSandboxFailed: the sandbox's network failed while a container was
// being made (recorded by networkUp).
var errSandboxFailed = errors.New("the pod's sandbox failed")

// usesPodIP reports whether the container's env needs the pod IP.
func usesPodIP(c *v1.Container) bool {
	for _, e := range c.Env {
		if p := e.GetValueFrom().GetFieldRef().GetFieldPath(); p == "status.podIP" || p == "status.podIPs" {
			return true
		}
	}
	return false
}

func (w *worker) startCreated(ctx context.Context, pod *v1.Pod, c *v1.Container, cur *runtime.ContainerStatus) {
	w.touched[cur.ID] = true
	if err := w.m.rt.StartContainer(ctx, cur.ID); err != nil {
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: failed to start container %q: %v", c.Name, err)
		return
	}
	w.m.rec.Eventf(pod, eventNormal, "Started", "Started container %s", c.Name)
}

// removeOldAttempts keeps the new attempt and the one before (for logs
// --previous and lastState) and removes older ones with their logs.
func (w *worker) removeOldAttempts(ctx context.Context, st *podState, name string, attempt uint32) {
	for _, c := range st.containers {
		if c.Name != name || c.Attempt+1 >= attempt {
			continue
		}
		if err := w.m.rt.RemoveContainer(ctx, c.ID); err != nil {
			w.log.Debug("removing an old container attempt", "container", c.ID, "err", err)
			continue
		}
		w.removed[c.ID] = true
		if c.LogPath != "" {
			_ = os.Remove(c.LogPath)
		}
	}
}

// containerConfig translates a container of the spec for the runtime.
func (w *worker) containerConfig(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *sandboxInfo, attempt uint32, init bool, vols map[string]string, volErr error) (runtime.ContainerConfig, error) {
	if volErr != nil && len(c.VolumeMounts) > 0 {
		return runtime.ContainerConfig{}, volErr
	}
	if usesPodIP(c) && !w.networkUp(ctx, pod, sb) {
		return runtime.ContainerConfig{}, errSandboxFailed
	}
	env, err := containerEnv(ctx, w.m.src, pod, c, podFields{podIP: addrString(sb.IP), hostIP: w.m.cfg.NodeIP.String()})
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mounts, err := containerMounts(c, vols)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	res, err := resources(c)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	labels := map[string]string{LabelNode: w.m.cfg.NodeName, LabelSpecImage: c.Image}
	if init {
		labels[LabelInit] = "true"
	}
	return runtime.ContainerConfig{
		Name:       c.Name,
		Attempt:    attempt,
		Image:      c.Image,
		Command:    expandAll(c.Command, env),
		Args:       expandAll(c.Args, env),
		Env:        env,
		WorkingDir: c.WorkingDir,
		Mounts:     mounts,
		Resources:  res,
		TTY:        c.Tty,
		LogPath:    w.m.cfg.LogPath(w.uid, c.Name, attempt),
		Labels:     labels,
	}, nil
}

// resources maps requests and limits onto cgroup settings; a cpu limit
// without a request requests the limit, as Kubernetes defaults it.
func resources(c *v1.Container) (runtime.Resources, error) {
	var r runtime.Resources
	get := func(m map[string]string, name, field string) (int64, bool, error) {
		s, ok := m[name]
		if !ok {
			return 0, false, nil
		}
		q, err := resource.Parse(s)
		if err != nil {
			return 0, false, configErrorf("resources.%s.%s %q: %v", field, name, s, err)
		}
		return q.MilliValue(), true, nil
	}
	req, lim := c.GetResources().GetRequests(), c.GetResources().GetLimits()
	cpuLim, hasCPULim, err := get(lim, "cpu", "limits")
	if err != nil {
		return r, err
	}
	cpuReq, hasCPUReq, err := get(req, "cpu", "requests")
	if err != nil {
		return r, err
	}
	memLim, hasMemLim, err := get(lim, "memory", "limits")
	if err != nil {
		return r, err
	}
	if hasCPULim {
		r.CPULimitMilli = cpuLim
		if !hasCPUReq {
			cpuReq, hasCPUReq = cpuLim, true
		}
	}
	if hasCPUReq {
		r.CPURequestMilli = cpuReq
	}
	if hasMemLim {
		r.MemoryLimitBytes = (memLim + 999) / 1000
	}
	return r, nil
}

// podGrace is the pod's termination grace period.
func podGrace(pod *v1.Pod) time.Duration {
	if g := pod.GetSpec().TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func parseAddr(s string) (netip.Addr, error) { return netip.ParseAddr(s) }
