package containerd

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// securityOpts applies a container's security context to its OCI spec the
// way containerd's CRI plugin does, so both backends run a pod alike: user
// and groups, capabilities over containerd's default set, privileged,
// read-only rootfs, no_new_privs, seccomp, the default masked and
// read-only /proc paths, and the sandbox's sysctls. They come after the
// image's config (which sets the image's user).
func securityOpts(sc runtime.SecurityConfig, sysctls map[string]string) []oci.SpecOpts {
	var opts []oci.SpecOpts
	if user := userString(sc); user != "" {
		opts = append(opts, oci.WithUser(user), oci.WithAdditionalGIDs(strings.Split(user, ":")[0]))
	}
	if len(sc.SupplementalGroups) > 0 {
		opts = append(opts, withSupplementalGroups(sc.SupplementalGroups))
	}
	if sc.Privileged {
		opts = append(opts, oci.WithPrivileged, oci.WithHostDevices, oci.WithAllDevicesAllowed)
	} else {
		opts = append(opts,
			oci.WithMaskedPaths(runtime.DefaultMaskedPaths),
			oci.WithReadonlyPaths(runtime.DefaultReadonlyPaths))
		opts = append(opts, capabilityOpts(sc.CapAdd, sc.CapDrop)...)
		switch sc.Seccomp.Type {
		case runtime.SeccompRuntimeDefault:
			opts = append(opts, seccomp.WithDefaultProfile())
		case runtime.SeccompLocalhost:
			opts = append(opts, seccomp.WithProfile(sc.Seccomp.LocalhostPath))
		}
	}
	if sc.ReadOnlyRootfs {
		opts = append(opts, oci.WithRootFSReadonly())
	}
	// containerd's default spec sets no_new_privs; Kubernetes leaves
	// escalation allowed unless allowPrivilegeEscalation is false.
	if sc.NoNewPrivs {
		opts = append(opts, oci.WithNoNewPrivileges)
	} else {
		opts = append(opts, oci.WithNewPrivileges)
	}
	if len(sysctls) > 0 {
		opts = append(opts, withSysctls(sysctls))
	}
	return opts
}

// userString is the OCI image spec user ("uid", "uid:gid") for the
// configured ids; "" keeps the image's. A group alone applies to the
// image's user, which is resolved at create: the image's config already
// set the user's uid.
func userString(sc runtime.SecurityConfig) string {
	switch {
	case sc.RunAsUser != nil && sc.RunAsGroup != nil:
		return strconv.FormatInt(*sc.RunAsUser, 10) + ":" + strconv.FormatInt(*sc.RunAsGroup, 10)
	case sc.RunAsUser != nil:
		return strconv.FormatInt(*sc.RunAsUser, 10)
	}
	return ""
}

// capabilityOpts adds then drops capabilities, "ALL" meaning every
// capability this process has (as containerd's CRI plugin).
func capabilityOpts(add, drop []string) []oci.SpecOpts {
	var opts []oci.SpecOpts
	names := func(list []string) (all bool, out []string) {
		for _, c := range list {
			if c = runtime.CapName(c); c == "ALL" {
				all = true
			} else {
				out = append(out, c)
			}
		}
		return all, out
	}
	addAll, adds := names(add)
	dropAll, drops := names(drop)
	if addAll {
		opts = append(opts, oci.WithAllCurrentCapabilities)
	}
	if dropAll {
		opts = append(opts, oci.WithCapabilities(nil))
	}
	if len(adds) > 0 {
		opts = append(opts, oci.WithAddedCapabilities(adds))
	}
	if len(drops) > 0 {
		opts = append(opts, oci.WithDroppedCapabilities(drops))
	}
	return opts
}

func withSupplementalGroups(groups []int64) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Process == nil {
			s.Process = &specs.Process{}
		}
		for _, g := range groups {
			if gid := uint32(g); !slices.Contains(s.Process.User.AdditionalGids, gid) {
				s.Process.User.AdditionalGids = append(s.Process.User.AdditionalGids, gid)
			}
		}
		return nil
	}
}

func withSysctls(sysctls map[string]string) oci.SpecOpts {
	return func(_ context.Context, _ oci.Client, _ *containers.Container, s *specs.Spec) error {
		if s.Linux == nil {
			s.Linux = &specs.Linux{}
		}
		if s.Linux.Sysctl == nil {
			s.Linux.Sysctl = map[string]string{}
		}
		for k, v := range sysctls {
			s.Linux.Sysctl[k] = v
		}
		return nil
	}
}
