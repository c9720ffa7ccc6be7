package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// RunPodSandbox implements runtime.SandboxRuntime. The runtime makes the
// pod's network namespace, starts its pause container and runs the CNI
// plugins of its CNI config on it; the pod's address is then in
// PodSandboxStatus. A CNI failure wraps runtime.ErrNetworkSetup, a missing
// sandbox image runtime.ErrSandboxImage. The half-made sandbox is removed
// — unless the runtime cannot tear its network down either (a CNI config
// whose DEL fails too): then it stays NotReady, listed under the pod, for
// the caller's housekeeping to remove once the network works again.
func (r *Runtime) RunPodSandbox(ctx context.Context, cfg runtime.SandboxConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	if cfg.NetNSPath != "" {
		return "", fmt.Errorf("sandbox for pod %s: netns path: must be empty (a CRI runtime makes the pod's network namespace): %w", cfg.Pod, runtime.ErrInvalid)
	}
	if cfg.CgroupParent == "" {
		cfg.CgroupParent = path.Join(r.cfg.CgroupParent, "pod"+cfg.Pod.UID)
	}
	if cfg.Hostname == "" {
		cfg.Hostname = cfg.Pod.Name
	}
	if cfg.UserNamespace != nil {
		if err := r.checkUserNamespaces(ctx); err != nil {
			return "", err
		}
	}
	if err := runtime.ApplyPodCgroup(cfg.CgroupParent, cfg.Resources); err != nil {
		return "", fmt.Errorf("sandbox for pod %s: %w", cfg.Pod, err)
	}
	pc, err := podSandboxConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.RunPodSandbox(ctx, &cri.RunPodSandboxRequest{Config: pc, RuntimeHandler: r.cfg.RuntimeHandler})
	if err != nil {
		r.removeFailed(ctx, cfg)
		return "", r.classifySandboxError(ctx, err, cfg.Pod)
	}
	r.remember(resp.PodSandboxId, pc)
	r.logger.Debug("sandbox created", "sandbox", resp.PodSandboxId, "pod", cfg.Pod.String())
	return resp.PodSandboxId, nil
}

// removeFailed removes what a failed RunPodSandbox left: containerd keeps
// a sandbox whose network could not be set up, NotReady.
func (r *Runtime) removeFailed(ctx context.Context, cfg runtime.SandboxConfig) {
	ctx = context.WithoutCancel(ctx)
	resp, err := r.rs.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{Filter: &cri.PodSandboxFilter{
		LabelSelector: map[string]string{labelPodUID: cfg.Pod.UID},
		State:         &cri.PodSandboxStateValue{State: cri.PodSandboxState_SANDBOX_NOTREADY},
	}})
	if err != nil {
		return
	}
	for _, s := range resp.Items {
		if s.GetMetadata().GetAttempt() != cfg.Attempt {
			continue
		}
		if _, err := r.rs.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: s.Id}); err != nil && !isNotFound(err) {
			r.logger.Warn("undoing a failed sandbox", "sandbox", s.Id, "err", describe(err))
			continue
		}
		if _, err := r.rs.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil && !isNotFound(err) {
			r.logger.Warn("undoing a failed sandbox", "sandbox", s.Id, "err", describe(err))
		}
	}
}

// classifySandboxError tells a failed pod network (CNI) and a missing
// sandbox image from other RunPodSandbox failures: by the messages
// containerd (1.6 and 2.x) gives a CNI failure, and by the sandbox image's
// absence.
func (r *Runtime) classifySandboxError(ctx context.Context, err error, pod runtime.PodRef) error {
	msg := describe(err)
	switch {
	case strings.Contains(msg, "failed to setup network for sandbox"),
		strings.Contains(msg, "cni plugin not initialized"),
		strings.Contains(msg, "cni config load failed"),
		strings.Contains(msg, "no network config found"):
		return fmt.Errorf("sandbox for pod %s: %w: %s", pod, runtime.ErrNetworkSetup, msg)
	case strings.Contains(msg, r.cfg.SandboxImage) || strings.Contains(msg, "sandbox image"):
		if _, serr := r.ImageStatus(context.WithoutCancel(ctx), r.cfg.SandboxImage); errors.Is(serr, runtime.ErrImageNotPresent) {
			return fmt.Errorf("sandbox for pod %s: %w: %s is not on the node: %s", pod, runtime.ErrSandboxImage, r.cfg.SandboxImage, msg)
		}
	}
	return wrap(err, "sandbox for pod %s", pod)
}

// podSandboxConfig is the CRI config of a sandbox: the pod's metadata,
// hostname, DNS, hostPorts, log directory, labels (with Kubernetes' pod
// labels) and annotations (with the whole config, so status can give it
// back), cgroup parent and namespaces.
func podSandboxConfig(cfg runtime.SandboxConfig) (*cri.PodSandboxConfig, error) {
	stored := cfg
	stored.Labels, stored.Annotations = nil, nil
	raw, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	pc := &cri.PodSandboxConfig{
		Metadata: &cri.PodSandboxMetadata{
			Name: cfg.Pod.Name, Namespace: cfg.Pod.Namespace, Uid: cfg.Pod.UID, Attempt: cfg.Attempt,
		},
		LogDirectory: cfg.LogDirectory,
		Labels:       merge(cfg.Labels, podLabels(cfg.Pod)),
		Annotations:  merge(cfg.Annotations, map[string]string{annotationSandboxConfig: string(raw)}),
		Linux: &cri.LinuxPodSandboxConfig{
			CgroupParent: cfg.CgroupParent,
			SecurityContext: &cri.LinuxSandboxSecurityContext{
				NamespaceOptions: namespaceOptions(cfg),
				Privileged:       cfg.Privileged,
			},
			Sysctls:   cfg.Sysctls,
			Resources: sandboxResources(cfg.Resources),
		},
	}
	if !cfg.HostNetwork {
		// A host-network pod has the node's UTS namespace too, so the
		// node's hostname (as in Kubernetes).
		pc.Hostname = cfg.Hostname
	}
	if d := cfg.DNS; d != nil {
		pc.DnsConfig = &cri.DNSConfig{Servers: d.Servers, Searches: d.Searches, Options: d.Options}
	}
	for _, m := range cfg.PortMappings {
		pc.PortMappings = append(pc.PortMappings, &cri.PortMapping{
			Protocol:      protocol(m.Protocol),
			ContainerPort: m.ContainerPort,
			HostPort:      m.HostPort,
			HostIp:        m.HostIP,
		})
	}
	return pc, nil
}

// namespaceOptions: the pod's own network namespace (or the node's), one
// IPC namespace per pod, a PID namespace per container (Kubernetes'
// defaults without shareProcessNamespace).
func namespaceOptions(cfg runtime.SandboxConfig) *cri.NamespaceOption {
	net := cri.NamespaceMode_POD
	if cfg.HostNetwork {
		net = cri.NamespaceMode_NODE
	}
	return &cri.NamespaceOption{Network: net, Pid: cri.NamespaceMode_CONTAINER, Ipc: cri.NamespaceMode_POD, UsernsOptions: usernsOptions(cfg.UserNamespace)}
}

func protocol(p string) cri.Protocol {
	switch strings.ToLower(p) {
	case "udp":
		return cri.Protocol_UDP
	case "sctp":
		return cri.Protocol_SCTP
	}
	return cri.Protocol_TCP
}

// remember caches a sandbox's CRI config; forget drops it.
func (r *Runtime) remember(id string, pc *cri.PodSandboxConfig) {
	r.mu.Lock()
	r.sandboxes[id] = pc
	r.mu.Unlock()
}

func (r *Runtime) forget(id string) {
	r.mu.Lock()
	delete(r.sandboxes, id)
	r.mu.Unlock()
}

// sandboxConfig returns the CRI config of sandbox id and whether it is
// Ready: from the cache, else rebuilt from its status (after a restart).
func (r *Runtime) sandboxConfig(ctx context.Context, id string) (*cri.PodSandboxConfig, runtime.SandboxState, error) {
	st, err := r.PodSandboxStatus(ctx, id)
	if err != nil {
		return nil, "", err
	}
	r.mu.Lock()
	pc := r.sandboxes[id]
	r.mu.Unlock()
	if pc == nil {
		if pc, err = podSandboxConfig(st.Config); err != nil {
			return nil, "", err
		}
		r.remember(id, pc)
	}
	return pc, st.State, nil
}

// StopPodSandbox implements runtime.SandboxRuntime: the runtime kills the
// sandbox's containers and its pause container and runs CNI DEL.
// Idempotent; nil for a sandbox that does not exist.
func (r *Runtime) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rs.StopPodSandbox(ctx, &cri.StopPodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
		return wrap(err, "stop sandbox %s", id)
	}
	return nil
}

// RemovePodSandbox implements runtime.SandboxRuntime: the runtime removes
// the sandbox's containers and the sandbox; the sandbox's cgroup parent is
// removed here if empty (the CRI leaves pod cgroups to the kubelet).
// Idempotent.
func (r *Runtime) RemovePodSandbox(ctx context.Context, id string) error {
	st, err := r.PodSandboxStatus(ctx, id)
	if errors.Is(err, runtime.ErrNotFound) {
		r.forget(id)
		return nil
	}
	if err != nil {
		return err
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rs.RemovePodSandbox(cctx, &cri.RemovePodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
		return wrap(err, "remove sandbox %s", id)
	}
	r.forget(id)
	runtime.RemoveCgroup(st.Config.CgroupParent)
	r.logger.Debug("sandbox removed", "sandbox", id, "pod", st.Config.Pod.String())
	return nil
}

// PodSandboxStatus implements runtime.SandboxRuntime, with the pod's IP.
func (r *Runtime) PodSandboxStatus(ctx context.Context, id string) (runtime.SandboxStatus, error) {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return runtime.SandboxStatus{}, wrap(err, "sandbox %s", id)
	}
	s := resp.GetStatus()
	st, err := sandboxStatus(s.GetId(), s.GetMetadata(), s.GetState(), s.GetCreatedAt(), s.GetLabels(), s.GetAnnotations())
	if err != nil {
		return runtime.SandboxStatus{}, err
	}
	if !st.Config.HostNetwork {
		st.IP = s.GetNetwork().GetIp()
	}
	return st, nil
}

// ListPodSandbox implements runtime.SandboxRuntime. Sandboxes made by
// others (without Tugboat's config annotation) are left out.
func (r *Runtime) ListPodSandbox(ctx context.Context, f runtime.SandboxFilter) ([]runtime.SandboxStatus, error) {
	filter := &cri.PodSandboxFilter{Id: f.ID, LabelSelector: copyLabels(f.Labels)}
	if f.PodUID != "" {
		filter.LabelSelector[labelPodUID] = f.PodUID
	}
	switch f.State {
	case runtime.SandboxReady:
		filter.State = &cri.PodSandboxStateValue{State: cri.PodSandboxState_SANDBOX_READY}
	case runtime.SandboxNotReady:
		filter.State = &cri.PodSandboxStateValue{State: cri.PodSandboxState_SANDBOX_NOTREADY}
	}
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, wrap(err, "list sandboxes")
	}
	out := make([]runtime.SandboxStatus, 0, len(resp.Items))
	for _, s := range resp.Items {
		if _, ok := s.Annotations[annotationSandboxConfig]; !ok {
			continue
		}
		st, err := sandboxStatus(s.Id, s.Metadata, s.State, s.CreatedAt, s.Labels, s.Annotations)
		if err != nil {
			r.logger.Warn("skipping unreadable sandbox", "sandbox", s.Id, "err", err)
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// sandboxStatus rebuilds a sandbox's status from what the CRI reports.
func sandboxStatus(id string, md *cri.PodSandboxMetadata, state cri.PodSandboxState, created int64, labels, annotations map[string]string) (runtime.SandboxStatus, error) {
	var cfg runtime.SandboxConfig
	raw, ok := annotations[annotationSandboxConfig]
	if !ok {
		return runtime.SandboxStatus{}, fmt.Errorf("sandbox %s: not made by Tugboat (no %s annotation): %w", id, annotationSandboxConfig, runtime.ErrNotFound)
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return runtime.SandboxStatus{}, fmt.Errorf("sandbox %s: config annotation: %w", id, err)
	}
	cfg.Pod = runtime.PodRef{Namespace: md.GetNamespace(), Name: md.GetName(), UID: md.GetUid()}
	cfg.Attempt = md.GetAttempt()
	cfg.Labels = userLabels(labels)
	cfg.Annotations = userLabels(annotations)
	st := runtime.SandboxStatus{ID: id, Config: cfg, State: runtime.SandboxNotReady, CreatedAt: nanos(created)}
	if state == cri.PodSandboxState_SANDBOX_READY {
		st.State = runtime.SandboxReady
	}
	return st, nil
}

// copyLabels returns a copy of m, never nil.
func copyLabels(m map[string]string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SandboxNetNS returns the path of a Ready sandbox's network namespace, as
// the runtime's verbose status gives it (containerd: the namespace in the
// pause container's runtime spec, else its process's /proc/PID/ns/net),
// for code that must act from inside the pod's network (the kubelet's
// Service check). ErrNotFound for a sandbox that does not exist; an error
// if the runtime does not say.
func (r *Runtime) SandboxNetNS(ctx context.Context, id string) (string, error) {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.PodSandboxStatus(ctx, &cri.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		return "", wrap(err, "sandbox %s", id)
	}
	var info struct {
		Pid         int `json:"pid"`
		RuntimeSpec struct {
			Linux struct {
				Namespaces []struct{ Type, Path string } `json:"namespaces"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if raw, ok := resp.GetInfo()["info"]; ok {
		_ = json.Unmarshal([]byte(raw), &info)
	}
	for _, ns := range info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return ns.Path, nil
		}
	}
	if info.Pid > 0 {
		return fmt.Sprintf("/proc/%d/ns/net", info.Pid), nil
	}
	return "", fmt.Errorf("sandbox %s: the runtime's status names no network namespace", id)
}
