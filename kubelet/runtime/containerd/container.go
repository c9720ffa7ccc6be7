package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// errNoImageVolumes: the native backend does not mount images.
var errNoImageVolumes = errors.New("image volumes are not supported by the native containerd backend (--runtime containerd): run the kubelet with --runtime cri on containerd 2.1 or later")

// ImageVolumes implements runtime.ContainerRuntime: the native backend
// does not mount images (that would take a read-only snapshot view per
// container, kept and removed with it); the CRI backend does.
func (r *Runtime) ImageVolumes(context.Context) error { return errNoImageVolumes }

// CreateContainer implements runtime.ContainerRuntime.
func (r *Runtime) CreateContainer(ctx context.Context, sandboxID string, cfg runtime.ContainerConfig) (string, error) {
	ctx = r.ns(ctx)
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	for _, m := range cfg.Mounts {
		if m.Image != "" {
			return "", fmt.Errorf("container %q: %w: %w", cfg.Name, runtime.ErrInvalid, errNoImageVolumes)
		}
	}
	if err := checkPropagation(cfg.Mounts); err != nil {
		return "", fmt.Errorf("create container %q: %w", cfg.Name, err)
	}
	for _, m := range cfg.Mounts {
		if m.RecursiveReadOnly {
			if err := r.RecursiveReadOnlyMounts(ctx); err != nil {
				return "", fmt.Errorf("create container %q: %w: %w", cfg.Name, runtime.ErrInvalid, err)
			}
		}
	}
	sb, err := r.loadSandbox(ctx, sandboxID)
	if err != nil {
		return "", err
	}
	if sb.State != runtime.SandboxReady {
		return "", fmt.Errorf("create container %q in sandbox %s: %w", cfg.Name, sandboxID, runtime.ErrSandboxNotReady)
	}
	img, err := r.readyImage(ctx, cfg.Image)
	if err != nil {
		return "", fmt.Errorf("create container %q: %w", cfg.Name, err)
	}
	imgSpec, err := img.Spec(ctx)
	if err != nil {
		return "", wrap(err, "create container %q: image %s config", cfg.Name, img.Name())
	}
	imgConfig, err := img.Config(ctx)
	if err != nil {
		return "", wrap(err, "create container %q: image %s config", cfg.Name, img.Name())
	}

	id := newID()
	cgroupsPath := path.Join(sb.Config.CgroupParent, id)
	labels := podLabels(sb.Config.Pod)
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[labelKind] = kindContainer
	labels[labelSandboxID] = sandboxID
	labels[labelContainerName] = cfg.Name
	labels[labelAttempt] = strconv.FormatUint(uint64(cfg.Attempt), 10)
	labels[labelLogPath] = cfg.LogPath
	labels[labelImageID] = imgConfig.Digest.String()
	labels[labelCgroupsPath] = cgroupsPath
	if sig := imgSpec.Config.StopSignal; sig != "" {
		labels[labelStopSignal] = sig
	}

	opts := specOpts(img, sb.Config, cfg, cgroupsPath)
	if cfg.PIDTargetID != "" {
		pidns, err := r.pidNamespace(ctx, sandboxID, cfg.PIDTargetID)
		if err != nil {
			return "", fmt.Errorf("create container %q: %w", cfg.Name, err)
		}
		opts = append(opts, oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.PIDNamespace, Path: pidns}))
	}
	_, err = r.client.NewContainer(ctx, id,
		client.WithImage(img),
		client.WithSnapshotter(r.cfg.Snapshotter),
		client.WithNewSnapshot(id, img),
		client.WithRuntime(r.cfg.Runtime, nil),
		client.WithNewSpec(opts...),
		client.WithContainerLabels(labels),
	)
	if err != nil {
		// NewContainer leaves the snapshot behind if the record fails.
		_ = r.snapshotter().Remove(ctx, id)
		return "", wrap(err, "create container %q", cfg.Name)
	}
	r.logger.Debug("container created", "container", id, "name", cfg.Name, "pod", sb.Config.Pod.String())
	return id, nil
}

// StartContainer implements runtime.ContainerRuntime.
func (r *Runtime) StartContainer(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	unlock := r.locks.lock(id)
	defer unlock()

	ctr, labels, err := r.loadContainer(ctx, id)
	if err != nil {
		return err
	}
	if labels[labelExitCode] != "" {
		return fmt.Errorf("start container %s: it already ran (containers are not restarted; create the next attempt): %w", id, runtime.ErrInvalid)
	}
	if t, err := ctr.Task(ctx, nil); err == nil {
		st, err := t.Status(ctx)
		if err != nil {
			return wrap(err, "start container %s", id)
		}
		if st.Status == client.Running {
			return nil // already started (a retry after a lost reply)
		}
		// A task left Created by an earlier, interrupted start.
		if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return wrap(err, "start container %s: delete stale task", id)
		}
	}
	logPath := labels[labelLogPath]
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return fmt.Errorf("start container %s: log dir: %w", id, err)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return wrap(err, "start container %s", id)
	}
	var ioc cio.Creator
	if spec.Process != nil && spec.Process.Terminal {
		u, err := cio.LogURIGenerator("file", logPath, nil)
		if err != nil {
			return err
		}
		ioc = cio.TerminalLogURI(u)
	} else {
		ioc = cio.LogFile(logPath)
	}
	task, err := ctr.NewTask(ctx, ioc)
	if err != nil {
		r.recordStartError(ctx, id, err)
		return wrap(err, "start container %s: create task", id)
	}
	started := time.Now() // before Start: a short-lived process may exit before Start returns
	if err := task.Start(ctx); err != nil {
		if _, derr := task.Delete(ctx, client.WithProcessKill); derr != nil && !errdefs.IsNotFound(derr) {
			r.logger.Warn("deleting failed task", "container", id, "err", derr)
		}
		r.recordStartError(ctx, id, err)
		return wrap(err, "start container %s", id)
	}
	if err := r.setLabels(ctx, id, map[string]string{labelStartedAt: formatTime(started)}); err != nil {
		return wrap(err, "start container %s: record start", id)
	}
	r.logger.Debug("container started", "container", id, "pid", task.Pid())
	return nil
}

// recordStartError marks a container that could not start as exited with
// code 128 and reason StartError, as Kubernetes shows it.
func (r *Runtime) recordStartError(ctx context.Context, id string, cause error) {
	now := formatTime(time.Now())
	err := r.setLabels(ctx, id, map[string]string{
		labelStartedAt:  now,
		labelFinishedAt: now,
		labelExitCode:   "128",
		labelReason:     runtime.ReasonStartError,
		labelMessage:    truncate(cause.Error(), 1024),
	})
	if err != nil {
		r.logger.Warn("recording start error", "container", id, "err", err)
	}
}

// RemoveContainer implements runtime.ContainerRuntime.
func (r *Runtime) RemoveContainer(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	unlock := r.locks.lock(id)
	defer unlock()

	ctr, _, err := r.loadContainer(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if t, err := ctr.Task(ctx, nil); err == nil {
		if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return wrap(err, "remove container %s: delete task", id)
		}
	} else if !errdefs.IsNotFound(err) {
		return wrap(err, "remove container %s", id)
	}
	if err := ctr.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
		return wrap(err, "remove container %s", id)
	}
	r.logger.Debug("container removed", "container", id)
	return nil
}

// loadContainer loads a container (not a sandbox) record and its labels.
func (r *Runtime) loadContainer(ctx context.Context, id string) (client.Container, map[string]string, error) {
	ctr, err := r.client.LoadContainer(ctx, id)
	if err != nil {
		return nil, nil, wrap(err, "container %s", id)
	}
	info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata)
	if err != nil {
		return nil, nil, wrap(err, "container %s", id)
	}
	labels := info.Labels
	if labels[labelKind] != kindContainer {
		return nil, nil, fmt.Errorf("container %s: not a container: %w", id, runtime.ErrNotFound)
	}
	return ctr, labels, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// pidNamespace is the PID namespace of container target's running task,
// which must be in sandbox sandboxID: what an ephemeral container with a
// targetContainerName joins (as containerd's CRI plugin does for
// NamespaceMode TARGET), as a path runc can open.
func (r *Runtime) pidNamespace(ctx context.Context, sandboxID, target string) (string, error) {
	ctr, labels, err := r.loadContainer(ctx, target)
	if err != nil {
		return "", fmt.Errorf("target container %s: %w", target, err)
	}
	if labels[labelSandboxID] != sandboxID {
		return "", fmt.Errorf("target container %s is not in sandbox %s: %w", target, sandboxID, runtime.ErrInvalid)
	}
	t, err := ctr.Task(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("target container %s is not running: %w", target, runtime.ErrInvalid)
	}
	return fmt.Sprintf("/proc/%d/ns/pid", t.Pid()), nil
}
