package runtime

import (
	"fmt"
	"path/filepath"
	"strings"
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
	// caller (kubelet/network) before RunPodSandbox, on a runtime that
	// leaves the pod network to its caller (the native containerd
	// backend, which requires it unless HostNetwork). Empty on a CRI
	// runtime: it makes the namespace and runs the CNI plugins itself in
	// RunPodSandbox (and CNI DEL in StopPodSandbox), and reports the pod's
	// address in SandboxStatus.IP.
	NetNSPath string `json:",omitempty"`
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

	// DNS, PortMappings and LogDirectory are for a runtime that runs the
	// pod network itself (CRI): the pod's resolv.conf as the runtime
	// writes it, its hostPorts (the portmap plugin, run by the runtime),
	// and the directory its containers' logs are under (every
	// ContainerConfig.LogPath of the sandbox must be inside it). The
	// native backend ignores DNS and PortMappings (the caller writes
	// resolv.conf and runs CNI) and needs no LogDirectory.
	DNS          *DNSConfig    `json:",omitempty"`
	PortMappings []PortMapping `json:",omitempty"`
	LogDirectory string        `json:",omitempty"`

	// Sysctls are namespaced kernel parameters set for the pod (net.* in
	// its network namespace, kernel.shm* and the other IPC ones in its
	// containers' IPC namespaces), by name ("net.ipv4.tcp_syncookies").
	Sysctls map[string]string `json:",omitempty"`
	// Privileged must be set if any container of the sandbox is
	// privileged (a CRI runtime refuses a privileged container in a
	// sandbox that is not).
	Privileged bool `json:",omitempty"`

	// UserNamespace, when set, puts the pod in a user namespace of its
	// own (hostUsers: false) with these mappings (Kubernetes' CRI
	// NamespaceOption.userns_options, mode POD); nil is the node's. A
	// runtime that cannot refuses the sandbox with
	// UserNamespacesUnsupported.
	UserNamespace *UserNamespace `json:",omitempty"`
	// Resources are the pod-level limits (spec.resources), set on the
	// CgroupParent before the first container starts, so that the pod's
	// containers together stay within them; nil sets none.
	Resources *PodResources `json:",omitempty"`

	// Labels are stored with the sandbox and can be filtered on
	// (SandboxFilter.Labels). Keys under "runtime.tugboat.io/" are reserved.
	Labels map[string]string
	// Annotations are stored with the sandbox, for people and tools that
	// look at the runtime (crictl inspectp); they cannot be filtered on.
	// Keys under "runtime.tugboat.io/" are reserved.
	Annotations map[string]string `json:",omitempty"`
}

// UserNamespace is a pod's user namespace: which node IDs its IDs are.
type UserNamespace struct {
	UIDs []IDMapping
	GIDs []IDMapping
}

// IDMapping maps Length IDs from ContainerID in the pod to HostID on the
// node.
type IDMapping struct {
	HostID      uint32
	ContainerID uint32
	Length      uint32
}

// PodResources are a pod's pod-level cgroup settings. Zero fields set
// nothing.
type PodResources struct {
	// CPUQuota and CPUPeriod (microseconds) cap the pod's cpu time
	// (cpu.max, or cpu.cfs_quota_us and cpu.cfs_period_us on cgroup v1);
	// CPUShares is its cpu weight in cgroup v1 shares (2-262144; cgroup
	// v2's cpu.weight is converted from it as runc does).
	CPUQuota  int64 `json:",omitempty"`
	CPUPeriod int64 `json:",omitempty"`
	CPUShares int64 `json:",omitempty"`
	// MemoryLimit in bytes (memory.max, or memory.limit_in_bytes).
	MemoryLimit int64 `json:",omitempty"`
}

// PortMapping publishes a container port on the node (a hostPort).
type PortMapping struct {
	HostPort      int32
	ContainerPort int32
	// Protocol is "tcp" (the default), "udp" or "sctp".
	Protocol string `json:",omitempty"`
	HostIP   string `json:",omitempty"`
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
	case c.NetNSPath != "" && c.HostNetwork:
		return fmt.Errorf("sandbox config: netns path: must be empty with host network: %w", ErrInvalid)
	}
	for i, p := range c.PortMappings {
		if p.HostPort <= 0 || p.HostPort > 65535 || p.ContainerPort <= 0 || p.ContainerPort > 65535 {
			return fmt.Errorf("sandbox config: port mappings[%d]: ports must be 1-65535: %w", i, ErrInvalid)
		}
		switch strings.ToLower(p.Protocol) {
		case "", "tcp", "udp", "sctp":
		default:
			return fmt.Errorf("sandbox config: port mappings[%d].protocol %q: must be tcp, udp or sctp: %w", i, p.Protocol, ErrInvalid)
		}
	}
	if c.LogDirectory != "" && !filepath.IsAbs(c.LogDirectory) {
		return fmt.Errorf("sandbox config: log directory %q: must be absolute: %w", c.LogDirectory, ErrInvalid)
	}
	if err := checkUserLabels("sandbox config", c.Labels); err != nil {
		return err
	}
	return checkUserLabels("sandbox config annotations", c.Annotations)
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
	// IP is the pod's address as a runtime that runs the pod network
	// reports it (CRI), set by PodSandboxStatus (not by ListPodSandbox);
	// empty where the caller runs CNI (it knows the address itself) and
	// for a host-network sandbox.
	IP string
}

// SandboxFilter selects sandboxes in ListPodSandbox. Zero fields match all.
type SandboxFilter struct {
	ID     string
	PodUID string
	State  SandboxState
	// Labels must all be present with these values.
	Labels map[string]string
}
