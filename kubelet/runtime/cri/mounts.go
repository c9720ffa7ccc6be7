package cri

import (
	"context"
	"fmt"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// propagation is a mount's CRI MountPropagation (Kubernetes'
// translateMountPropagation).
func propagation(p runtime.MountPropagation) cri.MountPropagation {
	switch p {
	case runtime.PropagationHostToContainer:
		return cri.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
	case runtime.PropagationBidirectional:
		return cri.MountPropagation_PROPAGATION_BIDIRECTIONAL
	}
	return cri.MountPropagation_PROPAGATION_PRIVATE
}

// RecursiveReadOnlyMounts implements runtime.Runtime as Kubernetes'
// kubelet decides it: the runtime's Status lists its runtime handlers
// with their features (containerd 2.0 and later, CRI-O 1.30); the
// sandboxes here use the default handler (name ""), which must report
// recursive_read_only_mounts. A runtime that lists no handlers
// (containerd 1.x) cannot be told to, and would ignore the field.
func (r *Runtime) RecursiveReadOnlyMounts(ctx context.Context) error {
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.Status(cctx, &cri.StatusRequest{})
	if err != nil {
		return wrap(err, "runtime status")
	}
	return rroSupported(resp.GetRuntimeHandlers(), r.versionString(ctx))
}

func rroSupported(handlers []*cri.RuntimeHandler, version string) error {
	if len(handlers) == 0 {
		return fmt.Errorf("the CRI runtime %s reports no runtime handler features (recursive read-only mounts need containerd 2.0 or later)", version)
	}
	for _, h := range handlers {
		if h.GetName() == "" {
			if !h.GetFeatures().GetRecursiveReadOnlyMounts() {
				return fmt.Errorf("the CRI runtime %s's default runtime handler does not support recursive read-only mounts (it needs runc 1.1 or later on Linux 5.12 or later)", version)
			}
			return nil
		}
	}
	return fmt.Errorf("the CRI runtime %s reports no default runtime handler", version)
}

func (r *Runtime) versionString(ctx context.Context) string {
	v, err := r.Version(ctx)
	if err != nil {
		return "(unknown version)"
	}
	return v.String()
}
