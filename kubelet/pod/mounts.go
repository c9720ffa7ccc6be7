package pod

import (
	"encoding/json"
	"fmt"
	"slices"

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
// The mounts are reported in status.containerStatuses[].volumeMounts as
// Kubernetes 1.30+ reports them, once the container exists in the
// runtime: name, mountPath, readOnly, and for a read-only mount
// recursiveReadOnly Enabled or Disabled. What was resolved is recorded on
// the container (LabelRecursiveReadOnlyMounts: the mount paths made
// recursively read-only), so the status says what the container got,
// also after a kubelet restart; Kubernetes resolves it again from the
// runtime's features for each status, which gives the same answer while
// the runtime is the same.

// LabelRecursiveReadOnlyMounts is the container label listing (a JSON
// array) the container paths of its recursive read-only mounts; absent:
// none.
const LabelRecursiveReadOnlyMounts = "tugboat.io/recursive-read-only-mounts"

// recursiveReadOnlyLabel is the label value for mounts, "" if none is
// recursively read-only.
func recursiveReadOnlyLabel(mounts []runtime.Mount) string {
	var paths []string
	for _, m := range mounts {
		if m.RecursiveReadOnly {
			paths = append(paths, m.ContainerPath)
		}
	}
	if len(paths) == 0 {
		return ""
	}
	b, _ := json.Marshal(paths)
	return string(b)
}

// volumeMountStatuses is Kubernetes' status of spec's volume mounts for a
// container created with labels (convertToAPIContainerStatuses).
func volumeMountStatuses(spec *v1.Container, labels map[string]string) []*v1.VolumeMountStatus {
	var rro []string
	if l := labels[LabelRecursiveReadOnlyMounts]; l != "" {
		_ = json.Unmarshal([]byte(l), &rro) // a label that does not parse: none
	}
	var out []*v1.VolumeMountStatus
	for _, vm := range spec.GetVolumeMounts() {
		st := &v1.VolumeMountStatus{Name: vm.Name, MountPath: vm.MountPath, ReadOnly: vm.ReadOnly}
		if vm.ReadOnly {
			mode := "Disabled"
			if slices.Contains(rro, vm.MountPath) {
				mode = "Enabled"
			}
			st.RecursiveReadOnly = &mode
		}
		out = append(out, st)
	}
	return out
}

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
