package cri

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// cfsPeriod is the CFS period cpu limits are expressed over (100ms), as in
// Kubernetes.
const cfsPeriod = 100000

// CreateContainer implements runtime.ContainerRuntime. The container's
// log path must be inside its sandbox's LogDirectory (the CRI takes it
// relative to that); the runtime writes the CRI log format there.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	for _, m := range cfg.Mounts {
		// A runtime without the feature would ignore the field.
		if m.RecursiveReadOnly {
			if err := r.RecursiveReadOnlyMounts(ctx); err != nil {
				return "", fmt.Errorf("create container %q: %w: %w", cfg.Name, runtime.ErrInvalid, err)
			}
			break
		}
	}
	pc, state, err := r.sandboxConfig(ctx, sandboxID)
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", cfg.Name, err)
	}
	if state != runtime.SandboxReady {
		return "", fmt.Errorf("create container %q in sandbox %s: %w", cfg.Name, sandboxID, runtime.ErrSandboxNotReady)
	}
	logPath, err := relativeLogPath(pc.LogDirectory, cfg.LogPath)
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", cfg.Name, err)
	}
	img, err := r.ImageStatus(ctx, cfg.Image)
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", cfg.Name, err)
	}
	pod := runtime.PodRef{Namespace: pc.Metadata.Namespace, Name: pc.Metadata.Name, UID: pc.Metadata.Uid}
	labels := podLabels(pod)
	labels[labelContainerName] = cfg.Name
	labels[labelSandboxID] = sandboxID
	labels[labelImage] = cfg.Image
	labels[labelImageID] = img.ID
	ns := pc.Linux.SecurityContext.NamespaceOptions
	if cfg.PIDTargetID != "" {
		// An ephemeral container's target: the runtime puts the process
		// in the target container's PID namespace (Kubernetes' kubelet
		// sends the same).
		ns = proto.Clone(ns).(*cri.NamespaceOption)
		ns.Pid, ns.TargetId = cri.NamespaceMode_TARGET, cfg.PIDTargetID
	}
	cc := &cri.ContainerConfig{
		Metadata:   &cri.ContainerMetadata{Name: cfg.Name, Attempt: cfg.Attempt},
		Image:      &cri.ImageSpec{Image: img.ID, UserSpecifiedImage: cfg.Image},
		Command:    cfg.Command,
		Args:       cfg.Args,
		WorkingDir: cfg.WorkingDir,
		Mounts:     mounts(etcFiles(pc), cfg.Mounts),
		Labels:     merge(cfg.Labels, labels),
		LogPath:    logPath,
		Tty:        cfg.TTY,
		Stdin:      cfg.Stdin,
		StdinOnce:  cfg.StdinOnce,
		Linux: &cri.LinuxContainerConfig{
			Resources:       resources(cfg.Resources),
			SecurityContext: containerSecurity(cfg.Security, ns),
		},
	}
	for _, e := range cfg.Env {
		cc.Envs = append(cc.Envs, &cri.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.CreateContainer(cctx, &cri.CreateContainerRequest{PodSandboxId: sandboxID, Config: cc, SandboxConfig: pc})
	if err != nil {
		return "", wrap(err, "create container %q", cfg.Name)
	}
	r.logger.Debug("container created", "container", resp.ContainerId, "name", cfg.Name, "pod", pod.String())
	return resp.ContainerId, nil
}

// relativeLogPath is logPath relative to the sandbox's log directory.
func relativeLogPath(dir, logPath string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("log path %s: the sandbox has no log directory: %w", logPath, runtime.ErrInvalid)
	}
	rel, err := filepath.Rel(dir, logPath)
	if err != nil || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
		return "", fmt.Errorf("log path %s: not inside the sandbox's log directory %s: %w", logPath, dir, runtime.ErrInvalid)
	}
	return rel, nil
}

// etcFiles are the sandbox's /etc files, from its stored config.
func etcFiles(pc *cri.PodSandboxConfig) runtime.EtcFiles {
	st, err := sandboxStatus("", pc.Metadata, cri.PodSandboxState_SANDBOX_READY, 0, pc.Labels, pc.Annotations)
	if err != nil {
		return runtime.EtcFiles{}
	}
	return st.Config.EtcFiles
}

// mounts are the container's bind mounts: the sandbox's /etc files (the
// kubelet's hosts, hostname and resolv.conf, as on the native backend),
// unless the container mounts something over them, then its own.
func mounts(etc runtime.EtcFiles, ms []runtime.Mount) []*cri.Mount {
	taken := make(map[string]bool, len(ms))
	for _, m := range ms {
		taken[path.Clean(m.ContainerPath)] = true
	}
	var out []*cri.Mount
	for _, f := range []struct{ src, dst string }{
		{etc.HostsPath, "/etc/hosts"},
		{etc.HostnamePath, "/etc/hostname"},
		{etc.ResolvConfPath, "/etc/resolv.conf"},
	} {
		if f.src != "" && !taken[f.dst] {
			out = append(out, &cri.Mount{HostPath: f.src, ContainerPath: f.dst, Readonly: true})
		}
	}
	for _, m := range ms {
		if m.Image != "" {
			// An image volume (CRI Mount.image, KEP 4639): the runtime
			// mounts the image's root file system, read-only.
			out = append(out, &cri.Mount{ContainerPath: path.Clean(m.ContainerPath), Readonly: true,
				Image: &cri.ImageSpec{Image: m.Image}, ImageSubPath: m.ImageSubPath,
				Propagation: propagation(m.Propagation), RecursiveReadOnly: m.RecursiveReadOnly})
			continue
		}
		out = append(out, &cri.Mount{HostPath: m.HostPath, ContainerPath: path.Clean(m.ContainerPath), Readonly: m.ReadOnly,
			Propagation: propagation(m.Propagation), RecursiveReadOnly: m.RecursiveReadOnly})
	}
	return out
}

// ImageVolumes implements runtime.Runtime: containerd's CRI mounts images
// (Mount.image) from 2.1 on, CRI-O's from 1.31; an older runtime would
// ignore the field and bind-mount an empty host path, so it is refused.
func (r *Runtime) ImageVolumes(ctx context.Context) error {
	v, err := r.Version(ctx)
	if err != nil {
		return err
	}
	return imageVolumesSupported(v)
}

func imageVolumesSupported(v runtime.VersionInfo) error {
	since := map[string][2]int{"containerd": {2, 1}, "cri-o": {1, 31}}[v.RuntimeName]
	if since == ([2]int{}) {
		return fmt.Errorf("image volumes: the CRI runtime %s does not mount images (CRI Mount.image): use containerd 2.1 or later", v)
	}
	var major, minor int
	if _, err := fmt.Sscanf(v.RuntimeVersion, "%d.%d", &major, &minor); err != nil {
		return fmt.Errorf("image volumes: CRI runtime %s: unknown version: %v", v, err)
	}
	if major < since[0] || major == since[0] && minor < since[1] {
		return fmt.Errorf("image volumes need %s %d.%d or later (CRI Mount.image); this node runs %s", v.RuntimeName, since[0], since[1], v)
	}
	return nil
}

// resources are the cgroup settings as Kubernetes' kubelet computes them:
// a CFS quota over a 100ms period for the cpu limit, cpu shares (1024 per
// core) for the request, the memory limit (the runtime sets swap to the
// same where the kernel accounts for it).
func resources(res runtime.Resources) *cri.LinuxContainerResources {
	out := &cri.LinuxContainerResources{}
	if res.MemoryLimitBytes > 0 {
		out.MemoryLimitInBytes = res.MemoryLimitBytes
	}
	if res.CPULimitMilli > 0 {
		out.CpuPeriod = cfsPeriod
		out.CpuQuota = max(res.CPULimitMilli*cfsPeriod/1000, 1000) // the kernel's minimum quota is 1ms
	}
	if res.CPURequestMilli > 0 {
		out.CpuShares = max(res.CPURequestMilli*1024/1000, 2)
	}
	return out
}

// StartContainer implements runtime.ContainerRuntime. A container that
// could not start is Exited with reason StartError (exit code 128), as the
// runtime records it.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	st, err := r.ContainerStatus(ctx, id)
	if err != nil {
		return err
	}
	switch st.State {
	case runtime.ContainerRunning:
		return nil // already started (a retry after a lost reply)
	case runtime.ContainerExited:
		return fmt.Errorf("start container %s: it already ran (containers are not restarted; create the next attempt): %w", id, runtime.ErrInvalid)
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rs.StartContainer(cctx, &cri.StartContainerRequest{ContainerId: id}); err != nil {
		return wrap(err, "start container %s", id)
	}
	r.logger.Debug("container started", "container", id)
	return nil
}

// StopContainer implements runtime.ContainerRuntime: the runtime sends the
// image's stop signal, waits up to grace (in whole seconds, at least one
// if grace > 0), then SIGKILL. A cancelled ctx ends the wait: the
// container is killed at once.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	st, err := r.ContainerStatus(ctx, id)
	if err != nil {
		return err
	}
	if st.State == runtime.ContainerExited {
		return nil
	}
	secs := int64(0)
	if grace > 0 {
		secs = max(int64((grace+time.Second-1)/time.Second), 1)
	}
	// The stop runs to its end even if ctx is cancelled (an interrupted
	// stop can leave the container running); a cancelled ctx sends a
	// second stop with no grace, which kills.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(secs)*time.Second+r.cfg.KillTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.rs.StopContainer(bg, &cri.StopContainerRequest{ContainerId: id, Timeout: secs})
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		r.logger.Debug("stop cancelled, killing", "container", id)
		if _, kerr := r.rs.StopContainer(bg, &cri.StopContainerRequest{ContainerId: id, Timeout: 0}); kerr != nil && !isNotFound(kerr) {
			r.logger.Warn("killing container", "container", id, "err", kerr)
		}
		err = <-done
	}
	if err != nil && !isNotFound(err) {
		return wrap(err, "stop container %s", id)
	}
	return nil
}

// RemoveContainer implements runtime.ContainerRuntime. Idempotent.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rs.RemoveContainer(ctx, &cri.RemoveContainerRequest{ContainerId: id}); err != nil && !isNotFound(err) {
		return wrap(err, "remove container %s", id)
	}
	r.logger.Debug("container removed", "container", id)
	return nil
}

// ContainerStatus implements runtime.ContainerRuntime.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (runtime.ContainerStatus, error) {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		return runtime.ContainerStatus{}, wrap(err, "container %s", id)
	}
	if _, ok := resp.GetStatus().GetLabels()[labelImageID]; !ok {
		return runtime.ContainerStatus{}, fmt.Errorf("container %s: not made by Tugboat: %w", id, runtime.ErrNotFound)
	}
	return containerStatus(resp.GetStatus()), nil
}

// ListContainers implements runtime.ContainerRuntime: one ListContainers
// call, filtered by the runtime, then a ContainerStatus call for each
// container that has started (start times, exit codes and reasons are not
// in the list). containerd answers both from memory, without asking the
// shims.
func (r *Runtime) ListContainers(ctx context.Context, f runtime.ContainerFilter) ([]runtime.ContainerStatus, error) {
	filter := &cri.ContainerFilter{Id: f.ID, PodSandboxId: f.SandboxID, LabelSelector: copyLabels(f.Labels)}
	if f.PodUID != "" {
		filter.LabelSelector[labelPodUID] = f.PodUID
	}
	if s, ok := criState(f.State); ok {
		filter.State = &cri.ContainerStateValue{State: s}
	}
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.ListContainers(ctx, &cri.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "list containers")
	}
	out := make([]runtime.ContainerStatus, 0, len(resp.Containers))
	for _, c := range resp.Containers {
		if _, ok := c.Labels[labelImageID]; !ok {
			continue // not Tugboat's
		}
		if c.State == cri.ContainerState_CONTAINER_CREATED {
			out = append(out, containerStatus(&cri.ContainerStatus{
				Id: c.Id, Metadata: c.Metadata, State: c.State, CreatedAt: c.CreatedAt,
				Image: c.Image, ImageRef: c.ImageRef, Labels: c.Labels, Annotations: c.Annotations,
			}))
			continue
		}
		st, err := r.rs.ContainerStatus(ctx, &cri.ContainerStatusRequest{ContainerId: c.Id})
		if isNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, wrap(err, "container %s", c.Id)
		}
		out = append(out, containerStatus(st.GetStatus()))
	}
	return out, nil
}

func criState(s runtime.ContainerState) (cri.ContainerState, bool) {
	switch s {
	case runtime.ContainerCreated:
		return cri.ContainerState_CONTAINER_CREATED, true
	case runtime.ContainerRunning:
		return cri.ContainerState_CONTAINER_RUNNING, true
	case runtime.ContainerExited:
		return cri.ContainerState_CONTAINER_EXITED, true
	case runtime.ContainerUnknown:
		return cri.ContainerState_CONTAINER_UNKNOWN, true
	}
	return 0, false
}

// containerStatus converts a CRI container status.
func containerStatus(s *cri.ContainerStatus) runtime.ContainerStatus {
	l := s.GetLabels()
	st := runtime.ContainerStatus{
		ID:        s.GetId(),
		SandboxID: l[labelSandboxID],
		Pod:       podFromLabels(l),
		Name:      s.GetMetadata().GetName(),
		Attempt:   s.GetMetadata().GetAttempt(),
		Image:     l[labelImage],
		ImageID:   l[labelImageID],
		CreatedAt: nanos(s.GetCreatedAt()),
		StartedAt: nanos(s.GetStartedAt()),
		LogPath:   s.GetLogPath(),
		LogFormat: runtime.LogFormatCRI,
		Labels:    userLabels(l),
		State:     runtime.ContainerUnknown,
	}
	switch s.GetState() {
	case cri.ContainerState_CONTAINER_CREATED:
		st.State = runtime.ContainerCreated
	case cri.ContainerState_CONTAINER_RUNNING:
		st.State = runtime.ContainerRunning
	case cri.ContainerState_CONTAINER_EXITED:
		st.State = runtime.ContainerExited
		st.ExitCode = int(s.GetExitCode())
		st.FinishedAt = nanos(s.GetFinishedAt())
		st.Reason, st.Message = exitReason(s)
	}
	return st
}

// exitReason maps the runtime's reason onto the runtime package's:
// Completed, Error, OOMKilled and StartError as containerd reports them;
// Unknown (exit code 255) for a container whose process was lost (the
// runtime or the node restarted while it ran).
func exitReason(s *cri.ContainerStatus) (string, string) {
	reason, msg := s.GetReason(), s.GetMessage()
	switch {
	case reason == runtime.ReasonOOMKilled, reason == runtime.ReasonStartError:
		return reason, msg
	case reason == runtime.ReasonUnknown || s.GetExitCode() == 255 && reason == "":
		if msg == "" {
			msg = "the container's process is gone: the runtime or the node restarted while it ran"
		}
		return runtime.ReasonUnknown, msg
	case s.GetExitCode() == 0:
		return runtime.ReasonCompleted, msg
	}
	return runtime.ReasonError, msg
}

func nanos(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// requireRunning fails with ErrNotRunning for a container that is not
// running.
func (r *Runtime) requireRunning(ctx context.Context, id, what string) error {
	st, err := r.ContainerStatus(ctx, id)
	if err != nil {
		return err
	}
	if st.State != runtime.ContainerRunning {
		return fmt.Errorf("%s in container %s: %w", what, id, runtime.ErrNotRunning)
	}
	return nil
}
