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
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// The container steps of a plan, carried out (syncRun.doContainers calls
// them in the plan's order).

// kill stops a running container for the step's reason (Killing event,
// preStop hook; the probe's terminationGracePeriodSeconds or the pod's)
// and reads its
// state after, for the step that follows (afterExit); false if it cannot
// be read. A container killed for a changed image restarts at once: its
// crash back-off is reset.
func (r *syncRun) kill(ctx context.Context, s containerStep) (*runtime.ContainerStatus, bool) {
	w, pod, c, cur := r.w, r.in.pod, s.c, s.cur
	grace := podGrace(pod)
	msg := fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)
	switch s.killReason {
	case killImageChanged:
	case killResize:
		msg = fmt.Sprintf("Container %s resize requires restart, will be restarted", c.Name)
	default:
		msg = fmt.Sprintf("Container %s failed %s, will be restarted", c.Name, s.killReason)
		pr := c.LivenessProbe
		if s.killReason == killStartup {
			pr = c.StartupProbe
		}
		if g := pr.GetTerminationGracePeriodSeconds(); pr != nil && pr.TerminationGracePeriodSeconds != nil {
			grace = time.Duration(g) * time.Second
		}
	}
	r.touched[cur.ID] = true
	if err := w.killContainer(ctx, pod, c, cur.ID, addrString(r.sb.IP), msg, grace, nil); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		w.log.Warn("killing container", "container", c.Name, "err", err)
	}
	fresh, err := w.m.rt.ContainerStatus(ctx, cur.ID)
	if err != nil {
		return nil, false
	}
	if s.killReason == killImageChanged || s.killReason == killResize {
		key := w.uid + "/" + c.Name
		w.m.crashBackoff.reset(key)
		r.in.crash[c.Name] = w.m.crashBackoff.state(key)
	}
	return &fresh, true
}

// start ensures the image, creates the container's new attempt and
// starts it. Whatever stops it is recorded as the container's waiting
// reason.
func (r *syncRun) start(ctx context.Context, s containerStep, vols map[string]string, volErr error) {
	w, pod, c := r.w, r.in.pod, s.c
	start := time.Now()
	if wt := w.m.images.ensure(ctx, pod, c); wt != nil {
		r.waiting[c.Name] = wt
		r.wakeAt(wt.Until)
		return
	}
	logStep(w.log, "image ready", start, nil, "container", c.Name)
	images, wt := r.imageVolumes(ctx, c)
	if wt != nil {
		r.waiting[c.Name] = wt
		r.wakeAt(wt.Until)
		return
	}
	cfg, err := r.containerConfig(ctx, c, s.attempt, s.init, vols, images, volErr)
	if errors.Is(err, errSandboxFailed) {
		return
	}
	if s.ephemeral {
		cfg.Labels[LabelEphemeral] = "true"
		cfg.PIDTargetID = s.targetID
	}
	if err != nil {
		reason := ReasonCreateContainerError
		var ce *configError
		if errors.As(err, &ce) {
			reason = ReasonCreateContainerConfigError
		}
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: %v", err)
		r.waitRetry(c.Name, reason, err)
		return
	}
	start = time.Now()
	id, err := w.m.rt.CreateContainer(ctx, r.sb.ID, cfg)
	logStep(w.log, "container created", start, err, "container", c.Name)
	if errors.Is(err, runtime.ErrImageNotPresent) {
		w.m.images.setPresent(c.Image, false) // removed behind our back: ask again next time
	}
	if err != nil {
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: %v", err)
		r.waitRetry(c.Name, ReasonCreateContainerError, err)
		return
	}
	r.touched[id] = true
	w.applied[id] = applied{res: cfg.Resources, spec: r.in.alloc.container(c).GetResources()}
	w.m.rec.Eventf(pod, eventNormal, "Created", "Created container %s", c.Name)
	if !r.networkUp(ctx) {
		return // the sandbox and this container are gone
	}
	start = time.Now()
	err = w.m.rt.StartContainer(ctx, id)
	logStep(w.log, "container started", start, err, "container", c.Name)
	if err != nil {
		// The runtime records the failure (reason StartError): the next
		// sync restarts the container under the crash back-off.
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: failed to start container %q: %v", c.Name, err)
		return
	}
	w.m.rec.Eventf(pod, eventNormal, "Started", "Started container %s", c.Name)
	r.removeOldAttempts(ctx, c.Name, s.attempt)
	r.postStart(ctx, c, id)
}

// waitRetry records a container whose config could not be built or which
// could not be created: it waits with reason and is tried again after
// configRetry.
func (r *syncRun) waitRetry(name, reason string, err error) {
	wt := &waiting{Reason: reason, Message: err.Error(), Until: r.w.m.now().Add(configRetry)}
	r.waiting[name] = wt
	r.wakeAt(wt.Until)
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

// startCreated starts an attempt that was created but never started.
func (r *syncRun) startCreated(ctx context.Context, c *v1.Container, cur *runtime.ContainerStatus) {
	w, pod := r.w, r.in.pod
	r.touched[cur.ID] = true
	if err := w.m.rt.StartContainer(ctx, cur.ID); err != nil {
		w.m.rec.Eventf(pod, eventWarning, "Failed", "Error: failed to start container %q: %v", c.Name, err)
		return
	}
	w.m.rec.Eventf(pod, eventNormal, "Started", "Started container %s", c.Name)
	r.postStart(ctx, c, cur.ID)
}

// removeOldAttempts keeps the new attempt and the one before (for logs
// --previous and lastState) and removes older ones with their logs.
func (r *syncRun) removeOldAttempts(ctx context.Context, name string, attempt uint32) {
	w := r.w
	for _, c := range r.in.state.containers {
		if c.Name != name || c.Attempt+1 >= attempt {
			continue
		}
		if err := w.m.rt.RemoveContainer(ctx, c.ID); err != nil {
			w.log.Debug("removing an old container attempt", "container", c.ID, "err", err)
			continue
		}
		r.removed[c.ID] = true
		if c.LogPath != "" {
			_ = os.Remove(c.LogPath)
		}
		_ = os.Remove(w.m.cfg.terminationLogPath(w.uid, name, c.Attempt))
		delete(w.messages, c.ID)
	}
}

// containerConfig translates a container of the spec for the runtime.
// images are the image volumes' images by volume name (imageVolumes).
func (r *syncRun) containerConfig(ctx context.Context, c *v1.Container, attempt uint32, init bool, vols, images map[string]string, volErr error) (runtime.ContainerConfig, error) {
	w, pod := r.w, r.in.pod
	if volErr != nil && len(c.VolumeMounts) > 0 {
		return runtime.ContainerConfig{}, volErr
	}
	if usesPodIP(c) && !r.networkUp(ctx) {
		return runtime.ContainerConfig{}, errSandboxFailed
	}
	env, err := containerEnv(ctx, w.m.src, pod, c, podFields{podIP: addrString(r.sb.IP), hostIP: w.m.cfg.NodeIP.String(), allocatable: w.m.cfg.allocatable(),
		emptyDir: func(vol string) string { return w.m.cfg.EmptyDirPath(w.uid, vol) }})
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mounts, err := containerMounts(c, vols, images, func() bool {
		err := w.m.rt.RecursiveReadOnlyMounts(ctx)
		if err != nil {
			w.log.Debug("no recursive read-only mounts", "container", c.Name, "reason", err)
		}
		return err == nil
	})
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	tm, err := w.m.cfg.terminationMount(w.uid, c, attempt)
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	mounts = append(mounts, tm...)
	res, err := resources(r.in.alloc.container(c)) // what the node admitted, not an unadmitted resize
	if err != nil {
		return runtime.ContainerConfig{}, err
	}
	sec := w.m.cfg.securityConfig(pod, c)
	if err := r.verifyRunAsNonRoot(ctx, c, sec); err != nil {
		return runtime.ContainerConfig{}, err
	}
	labels := map[string]string{LabelNode: w.m.cfg.NodeName, LabelSpecImage: c.Image}
	if init {
		labels[LabelInit] = "true"
	}
	if rro := recursiveReadOnlyLabel(mounts); rro != "" {
		labels[LabelRecursiveReadOnlyMounts] = rro
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
		Security:   sec,
		TTY:        c.Tty,
		Stdin:      c.Stdin,
		StdinOnce:  c.StdinOnce,
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

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

func parseAddr(s string) (netip.Addr, error) { return netip.ParseAddr(s) }
