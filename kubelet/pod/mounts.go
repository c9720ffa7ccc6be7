package pod

import (
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Mount propagation and recursive read-only mounts, as Kubernetes'
// kubelet resolves them (makeMounts): mountPropagation None or unset is a
// private mount, HostToContainer and Bidirectional are passed to the
// runtime (CRI Mount.propagation; rslave/rshared on the native backend).
// recursiveReadOnly IfPossible is a recursive read-only mount if the
// runtime can make one and a plain read-only mount otherwise; Enabled on
// a runtime that cannot fails the container with
// CreateContainerConfigError and Kubernetes' message (retried, as every
// config error).
//
// Not done: Kubernetes also reports the mounts in
// status.containerStatuses[].volumeMounts (with the resolved
// recursiveReadOnly); this API has no volume mount status.

// mountPropagation is Kubernetes' translateMountPropagation.
func mountPropagation(m *v1.VolumeMount) (runtime.MountPropagation, error) {
	if m.MountPropagation == nil {
		return runtime.PropagationPrivate, nil
	}
	switch p := m.GetMountPropagation(); p {
	case "None":
		return runtime.PropagationPrivate, nil
	case "HostToContainer":
		return runtime.PropagationHostToContainer, nil
	case "Bidirectional":
		return runtime.PropagationBidirectional, nil
	default:
		return "", configErrorf("invalid MountPropagation mode: %q", p)
	}
}

// resolveRecursiveReadOnly is Kubernetes' function of that name: whether
// the mount is made recursively read-only.
func resolveRecursiveReadOnly(m *v1.VolumeMount, runtimeSupportsRRO func() bool) (bool, error) {
	if m.RecursiveReadOnly == nil || m.GetRecursiveReadOnly() == "Disabled" {
		return false, nil
	}
	if !m.ReadOnly {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not read-only", m.Name)
	}
	if m.MountPropagation != nil && m.GetMountPropagation() != "None" {
		return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not compatible with propagation %q",
			m.Name, m.GetMountPropagation())
	}
	switch mode := m.GetRecursiveReadOnly(); mode {
	case "IfPossible":
		return runtimeSupportsRRO(), nil
	case "Enabled":
		if !runtimeSupportsRRO() {
			return false, fmt.Errorf("volume %q requested recursive read-only mode, but it is not supported by the runtime", m.Name)
		}
		return true, nil
	default:
		return false, fmt.Errorf("unknown recursive read-only mode %q", mode)
	}
}
