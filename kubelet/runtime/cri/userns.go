package cri

import (
	"context"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// checkUserNamespaces asks the runtime (CRI Status, runtime_handlers)
// whether the handler the sandboxes run with supports user namespaces,
// as Kubernetes' kubelet does before it sends userns_options: containerd
// 2.0 and later report features.user_namespaces for a runtime that can
// (idmapped mounts), containerd 1.6 reports no handlers at all.
func (r *Runtime) checkUserNamespaces(ctx context.Context) error {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.Status(ctx, &cri.StatusRequest{})
	if err != nil {
		return wrap(err, "runtime status")
	}
	for _, h := range resp.GetRuntimeHandlers() {
		if h.GetName() == r.cfg.RuntimeHandler {
			if h.GetFeatures().GetUserNamespaces() {
				return nil
			}
			break
		}
	}
	return runtime.UserNamespacesUnsupported(r.cfg.RuntimeHandler)
}

// usernsOptions is the CRI form of a pod's user namespace: mode POD with
// its mappings (nil: the node's).
func usernsOptions(u *runtime.UserNamespace) *cri.UserNamespace {
	if u == nil {
		return nil
	}
	conv := func(ms []runtime.IDMapping) []*cri.IDMapping {
		out := make([]*cri.IDMapping, len(ms))
		for i, m := range ms {
			out[i] = &cri.IDMapping{HostId: m.HostID, ContainerId: m.ContainerID, Length: m.Length}
		}
		return out
	}
	return &cri.UserNamespace{Mode: cri.NamespaceMode_POD, Uids: conv(u.UIDs), Gids: conv(u.GIDs)}
}

// sandboxResources is the CRI form of the pod-level limits, for the
// runtime's information (LinuxPodSandboxConfig.resources); the kubelet
// sets them on the pod's cgroup itself (runtime.ApplyPodCgroup).
func sandboxResources(r *runtime.PodResources) *cri.LinuxContainerResources {
	if r == nil {
		return nil
	}
	return &cri.LinuxContainerResources{CpuQuota: r.CPUQuota, CpuPeriod: r.CPUPeriod, CpuShares: r.CPUShares, MemoryLimitInBytes: r.MemoryLimit}
}
