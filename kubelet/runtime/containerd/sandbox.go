package containerd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// RunPodSandbox implements runtime.SandboxRuntime. The sandbox is a
// containerd container record (no task, no snapshot) holding the config.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg runtime.SandboxConfig) (string, error) {
	ctx = r.ns(ctx)
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if !cfg.HostNetwork {
		// This backend leaves the pod network to its caller.
		if cfg.NetNSPath == "" {
			return "", fmt.Errorf("sandbox for pod %s: netns path: required (the caller makes the pod's network namespace on this backend): %w", cfg.Pod, runtime.ErrInvalid)
		}
		if _, err := os.Stat(cfg.NetNSPath); err != nil {
			return "", fmt.Errorf("sandbox for pod %s: netns: %v: %w", cfg.Pod, err, runtime.ErrInvalid)
		}
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = path.Join(r.cfg.CgroupParent, "pod"+cfg.Pod.UID)
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.Pod.Name
	}
	if cfg.UserNamespace != nil {
		// This backend builds the OCI specs itself and has no idmapped
		// mounts: no user namespaces (the CRI backend on containerd 2.0
		// or later has them).
		return "", runtime.UserNamespacesUnsupported("")
	}
	if err := runtime.ApplyPodCgroup(cfg.CgroupParent, cfg.Resources); err != nil {
		return "", fmt.Errorf("sandbox for pod %s: %w", cfg.Pod, err)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return "", err
	}
	labels := podLabels(cfg.Pod)
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	labels[labelKind] = kindSandbox
	labels[labelAttempt] = strconv.FormatUint(uint64(cfg.Attempt), 10)
	labels[labelSandboxState] = string(runtime.SandboxReady)

	// The record references no snapshot or content, so it is created
	// directly, without the lease client.NewContainer takes and drops
	// around it (two metadata commits per pod).
	rec := containers.Container{ID: newID()}
	for _, o := range []client.NewContainerOpts{
		client.WithRuntime(r.cfg.Runtime, nil),
		client.WithSpec(&oci.Spec{Version: specs.Version}),
		client.WithContainerLabels(labels),
		client.WithContainerExtension(extSandboxConfig, &anypb.Any{TypeUrl: typeSandboxConfig, Value: raw}),
	} {
		if err := o(ctx, r.client, &rec); err != nil {
			return "", fmt.Errorf("sandbox for pod %s: %w", cfg.Pod, err)
		}
	}
	id := rec.ID
	if _, err := r.client.ContainerService().Create(ctx, rec); err != nil {
		return "", wrap(err, "sandbox for pod %s", cfg.Pod)
	}
	r.logger.Debug("sandbox created", "sandbox", id, "pod", cfg.Pod.String())
	return id, nil
}

// StopPodSandbox implements runtime.SandboxRuntime.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	sb, err := r.loadSandbox(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cs, err := r.ListContainers(ctx, runtime.ContainerFilter{SandboxID: id})
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if c.State == runtime.ContainerRunning || c.State == runtime.ContainerUnknown {
			if err := r.StopContainer(ctx, c.ID, 0); err != nil && !isNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop sandbox %s: %w", id, err)
	}
	if sb.State == runtime.SandboxReady {
		if err := r.setLabels(ctx, id, map[string]string{labelSandboxState: string(runtime.SandboxNotReady)}); err != nil && !isNotFound(err) {
			return wrap(err, "stop sandbox %s", id)
		}
	}
	return nil
}

// RemovePodSandbox implements runtime.SandboxRuntime.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	ctx = r.ns(ctx)
	sb, err := r.loadSandbox(ctx, id)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	cs, err := r.ListContainers(ctx, runtime.ContainerFilter{SandboxID: id})
	if err != nil {
		return err
	}
	for _, c := range cs {
		if err := r.RemoveContainer(ctx, c.ID); err != nil {
			return fmt.Errorf("remove sandbox %s: %w", id, err)
		}
	}
	if err := r.client.ContainerService().Delete(ctx, id); err != nil && !isNotFound(err) {
		return wrap(err, "remove sandbox %s", id)
	}
	runtime.RemoveCgroup(sb.Config.CgroupParent)
	r.logger.Debug("sandbox removed", "sandbox", id, "pod", sb.Config.Pod.String())
	return nil
}

// PodSandboxStatus implements runtime.SandboxRuntime.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string) (runtime.SandboxStatus, error) {
	return r.loadSandbox(r.ns(ctx), id)
}

// ListPodSandbox implements runtime.SandboxRuntime.
func (r *Runtime) ListPodSandbox(ctx context.Context, f runtime.SandboxFilter) ([]runtime.SandboxStatus, error) {
	ctx = r.ns(ctx)
	clauses := []string{labelFilter(labelKind, kindSandbox)}
	if f.ID != "" {
		clauses = append(clauses, "id=="+strconv.Quote(f.ID))
	}
	if f.PodUID != "" {
		clauses = append(clauses, labelFilter(labelPodUID, f.PodUID))
	}
	if f.State != "" {
		clauses = append(clauses, labelFilter(labelSandboxState, string(f.State)))
	}
	for k, v := range f.Labels {
		clauses = append(clauses, labelFilter(k, v))
	}
	recs, err := r.client.ContainerService().List(ctx, filterExpr(clauses...))
	if err != nil {
		return nil, wrap(err, "list sandboxes")
	}
	out := make([]runtime.SandboxStatus, 0, len(recs))
	for _, rec := range recs {
		st, err := sandboxStatus(rec)
		if err != nil {
			r.logger.Warn("skipping unreadable sandbox record", "sandbox", rec.ID, "err", err)
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

func (r *Runtime) loadSandbox(ctx context.Context, id string) (runtime.SandboxStatus, error) {
	rec, err := r.client.ContainerService().Get(ctx, id)
	if err != nil {
		return runtime.SandboxStatus{}, wrap(err, "sandbox %s", id)
	}
	if rec.Labels[labelKind] != kindSandbox {
		return runtime.SandboxStatus{}, fmt.Errorf("sandbox %s: is a %s: %w", id, rec.Labels[labelKind], runtime.ErrNotFound)
	}
	return sandboxStatus(rec)
}

func sandboxStatus(rec containers.Container) (runtime.SandboxStatus, error) {
	var cfg runtime.SandboxConfig
	ext, ok := rec.Extensions[extSandboxConfig]
	if !ok || ext == nil {
		return runtime.SandboxStatus{}, fmt.Errorf("sandbox %s: config extension missing", rec.ID)
	}
	if err := json.Unmarshal(ext.GetValue(), &cfg); err != nil {
		return runtime.SandboxStatus{}, fmt.Errorf("sandbox %s: config: %w", rec.ID, err)
	}
	cfg.Labels = userLabels(rec.Labels)
	return runtime.SandboxStatus{
		ID:        rec.ID,
		Config:    cfg,
		State:     runtime.SandboxState(rec.Labels[labelSandboxState]),
		CreatedAt: rec.CreatedAt,
	}, nil
}

// setLabels sets (adds or replaces) labels on the record id.
func (r *Runtime) setLabels(ctx context.Context, id string, labels map[string]string) error {
	paths := make([]string, 0, len(labels))
	for k := range labels {
		paths = append(paths, "labels."+k)
	}
	_, err := r.client.ContainerService().Update(ctx, containers.Container{ID: id, Labels: labels}, paths...)
	return err
}
