package runtime

import (
	"fmt"
	"path/filepath"
	"strings"
)

// SecurityConfig is a container's security context, as the kubelet has
// computed it from the pod's and the container's (the container's fields
// win). The zero value is the runtime's default: the image's user, the
// runtime's default capability set (containerd's), no seccomp filter,
// privilege escalation allowed, a writable root filesystem.
type SecurityConfig struct {
	// RunAsUser and RunAsGroup replace the image's user and group; nil
	// keeps the image's (a RunAsUser without RunAsGroup takes the user's
	// primary group from the image's /etc/passwd, else 0).
	RunAsUser  *int64 `json:",omitempty"`
	RunAsGroup *int64 `json:",omitempty"`
	// SupplementalGroups are added to the process's groups, besides those
	// the image's /etc/group gives the user.
	SupplementalGroups []int64 `json:",omitempty"`

	// Privileged: every capability the runtime has, every host device,
	// no masked or read-only /proc paths, writable /sys and cgroupfs, no
	// seccomp filter. The sandbox must be made with
	// SandboxConfig.Privileged.
	Privileged bool `json:",omitempty"`
	// ReadOnlyRootfs mounts the image's filesystem read-only (mounts and
	// the /etc files stay as they are).
	ReadOnlyRootfs bool `json:",omitempty"`
	// NoNewPrivs sets no_new_privs: setuid binaries and file capabilities
	// do not raise the process's privileges (allowPrivilegeEscalation:
	// false).
	NoNewPrivs bool `json:",omitempty"`
	// CapAdd and CapDrop change the default capability set; names are
	// without the CAP_ prefix ("NET_RAW"), "ALL" for every capability.
	// Drops apply after adds, so drop ALL + add X leaves only X.
	CapAdd  []string `json:",omitempty"`
	CapDrop []string `json:",omitempty"`

	// Seccomp is the container's seccomp filter.
	Seccomp SeccompProfile `json:",omitempty"`
}

// SeccompType is the kind of seccomp filter a container gets.
type SeccompType string

const (
	// SeccompUnconfined: no filter (Kubernetes' default).
	SeccompUnconfined SeccompType = ""
	// SeccompRuntimeDefault: the runtime's default profile (containerd's,
	// Docker's list).
	SeccompRuntimeDefault SeccompType = "RuntimeDefault"
	// SeccompLocalhost: the profile in the JSON file LocalhostPath on the
	// node (the OCI runtime spec's LinuxSeccomp form, as Docker writes).
	SeccompLocalhost SeccompType = "Localhost"
)

// SeccompProfile names a container's seccomp filter.
type SeccompProfile struct {
	Type SeccompType `json:",omitempty"`
	// LocalhostPath is the absolute path of the profile for Localhost.
	LocalhostPath string `json:",omitempty"`
}

// DefaultMaskedPaths and DefaultReadonlyPaths are the /proc and /sys paths
// a non-privileged container cannot read or write (procMount Default), as
// Kubernetes' kubelet passes them to the runtime.
var (
	DefaultMaskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
		"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
	}
	DefaultReadonlyPaths = []string{
		"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
	}
)

// CapName is the capability's name with the CAP_ prefix the OCI spec uses.
func CapName(c string) string {
	c = strings.ToUpper(c)
	if c == "ALL" || strings.HasPrefix(c, "CAP_") {
		return c
	}
	return "CAP_" + c
}

// validate names the first bad field of a container's security config.
func (s SecurityConfig) validate(name string) error {
	for _, id := range append([]*int64{s.RunAsUser, s.RunAsGroup}, ptrs(s.SupplementalGroups)...) {
		if id != nil && (*id < 0 || *id > 1<<32-2) {
			return fmt.Errorf("container %q: security: id %d out of range: %w", name, *id, ErrInvalid)
		}
	}
	switch s.Seccomp.Type {
	case SeccompUnconfined, SeccompRuntimeDefault:
	case SeccompLocalhost:
		if !filepath.IsAbs(s.Seccomp.LocalhostPath) {
			return fmt.Errorf("container %q: security: seccomp localhost path %q: must be absolute: %w", name, s.Seccomp.LocalhostPath, ErrInvalid)
		}
	default:
		return fmt.Errorf("container %q: security: seccomp type %q: %w", name, s.Seccomp.Type, ErrInvalid)
	}
	return nil
}

func ptrs(v []int64) []*int64 {
	out := make([]*int64, len(v))
	for i := range v {
		out[i] = &v[i]
	}
	return out
}
