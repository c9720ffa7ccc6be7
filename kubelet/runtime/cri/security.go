package cri

import (
	"strconv"
	"strings"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// containerSecurity is a container's CRI security context as Kubernetes'
// kubelet fills it: the pod's namespaces, user and groups, capabilities
// (names without CAP_, "ALL"), privileged, read-only rootfs, no_new_privs,
// seccomp, and the default masked and read-only paths (procMount Default;
// a privileged container gets none).
func containerSecurity(sc runtime.SecurityConfig, ns *cri.NamespaceOption) *cri.LinuxContainerSecurityContext {
	out := &cri.LinuxContainerSecurityContext{
		NamespaceOptions:   ns,
		Privileged:         sc.Privileged,
		ReadonlyRootfs:     sc.ReadOnlyRootfs,
		NoNewPrivs:         sc.NoNewPrivs,
		SupplementalGroups: sc.SupplementalGroups,
		Seccomp:            seccompProfile(sc.Seccomp),
	}
	if sc.RunAsUser != nil {
		out.RunAsUser = &cri.Int64Value{Value: *sc.RunAsUser}
	}
	if sc.RunAsGroup != nil {
		out.RunAsGroup = &cri.Int64Value{Value: *sc.RunAsGroup}
	}
	if len(sc.CapAdd)+len(sc.CapDrop) > 0 {
		out.Capabilities = &cri.Capability{AddCapabilities: criCaps(sc.CapAdd), DropCapabilities: criCaps(sc.CapDrop)}
	}
	if !sc.Privileged {
		out.MaskedPaths = runtime.DefaultMaskedPaths
		out.ReadonlyPaths = runtime.DefaultReadonlyPaths
	}
	return out
}

// criCaps are capability names as the CRI takes them: upper case, no
// CAP_ prefix (containerd 1.6 adds it itself).
func criCaps(caps []string) []string {
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = strings.TrimPrefix(runtime.CapName(c), "CAP_")
	}
	return out
}

func seccompProfile(p runtime.SeccompProfile) *cri.SecurityProfile {
	switch p.Type {
	case runtime.SeccompRuntimeDefault:
		return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_RuntimeDefault}
	case runtime.SeccompLocalhost:
		return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_Localhost, LocalhostRef: p.LocalhostPath}
	}
	return &cri.SecurityProfile{ProfileType: cri.SecurityProfile_Unconfined}
}

// imageUser is the image's user as the CRI reports it: its uid if numeric,
// else its name.
func imageUser(img *cri.Image) string {
	if u := img.GetUid(); u != nil {
		return strconv.FormatInt(u.Value, 10)
	}
	return img.GetUsername()
}
