package runtime

import (
	"fmt"
	"time"
)

// PodRef names the pod a sandbox or container belongs to.
type PodRef struct {
	Namespace string
	Name      string
	UID       string
}

// String is "namespace/name".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// SandboxConfig describes a pod sandbox to RunPodSandbox.
type SandboxConfig struct {
	// Pod identifies the pod; all three fields are required.
	Pod PodRef
	// Attempt counts the sandboxes made for this pod (0 for the first).
	Attempt uint32

	// Hostname is the pod's hostname (the pod name unless the spec says
	// otherwise); every container of the sandbox gets it.
	Hostname string

	// NetNSPath is the network namespace the containers join, made by the
	// caller (kubelet/network) before RunPodSandbox. Required unless
	// HostNetwork.
	NetNSPath string
	// HostNetwork: the containers join the node's network namespace, which
	// is the caller's: that of the process calling CreateContainer (the
	// kubelet), looked up at each create, so a restarted kubelet's
	// containers join the same one.
	HostNetwork bool `json:",omitempty"`

	// EtcFiles are bind-mounted into every container of the sandbox. They
	// must exist when containers are created, not before: the usual order
	// is RunPodSandbox with EtcFilesIn(dir), CNI ADD, WriteEtcFiles(dir).
	EtcFiles EtcFiles

	// CgroupParent is the cgroup path (cgroupfs style, e.g.
	// "/tugboat/pod<uid>") under which each container gets its own cgroup.
	// Empty: the implementation's default parent plus "pod<uid>". The runtime
	// removes it, if empty, in RemovePodSandbox.
	CgroupParent string

	// Labels are stored with the sandbox and can be filtered on
	// (SandboxFilter.Labels). Keys under "runtime.tugboat.io/" are reserved.
	Labels map[string]string
}

// EtcFiles names host files that are bind-mounted over the container's
// /etc/hosts, /etc/hostname and /etc/resolv.conf. An empty path leaves the
// image's file. The caller writes them (WriteEtcFiles) before creating
// containers; they are mounted read-only.
type EtcFiles struct {
	HostsPath      string
	HostnamePath   string
	ResolvConfPath string
}

// Validate names the first missing required field.
func (c SandboxConfig) Validate() error {
	switch {
	case c.Pod.UID == "":
		return fmt.Errorf("sandbox config: pod uid: required: %w", ErrInvalid)
	case c.Pod.Name == "":
		return fmt.Errorf("sandbox config: pod name: required: %w", ErrInvalid)
	case c.Pod.Namespace == "":
		return fmt.Errorf("sandbox config: pod namespace: required: %w", ErrInvalid)
	case c.NetNSPath == "" && !c.HostNetwork:
		return fmt.Errorf("sandbox config: netns path: required: %w", ErrInvalid)
	case c.NetNSPath != "" && c.HostNetwork:
		return fmt.Errorf("sandbox config: netns path: must be empty with host network: %w", ErrInvalid)
	}
	return checkUserLabels("sandbox config", c.Labels)
}

// SandboxState is Ready from RunPodSandbox until StopPodSandbox.
type SandboxState string

const (
	SandboxReady    SandboxState = "Ready"
	SandboxNotReady SandboxState = "NotReady"
)

// SandboxStatus is what PodSandboxStatus and ListPodSandbox report.
type SandboxStatus struct {
	ID        string
	Config    SandboxConfig
	State     SandboxState
	CreatedAt time.Time
}

// SandboxFilter selects sandboxes in ListPodSandbox. Zero fields match all.
type SandboxFilter struct {
	ID     string
	PodUID string
	State  SandboxState
	// Labels must all be present with these values.
	Labels map[string]string
}
