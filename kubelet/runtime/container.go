package runtime

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// ReservedLabelPrefix prefixes the labels a runtime sets itself (pod
// identity, state, exit status). Callers may not set labels under it.
const ReservedLabelPrefix = "runtime.tugboat.io/"

// ContainerConfig describes a container to CreateContainer.
type ContainerConfig struct {
	// Name is the container's name in the pod spec. Required.
	Name string
	// Attempt counts the containers made for this name in this sandbox
	// (0 for the first; the restart count).
	Attempt uint32

	// Image is the image reference; it must be on the node (ImageStatus).
	Image string
	// Command replaces the image's entrypoint, Args its cmd, with
	// Kubernetes' rules: Command set -> Command+Args; only Args set ->
	// entrypoint+Args; neither -> entrypoint+cmd.
	Command []string
	Args    []string
	// Env is added to the image's environment, overriding equal names.
	Env []EnvVar
	// WorkingDir overrides the image's working directory if set.
	WorkingDir string

	// Mounts are bind mounts from the host, in order.
	Mounts []Mount

	Resources Resources

	// Security is the container's security context.
	Security SecurityConfig

	// TTY allocates a terminal for the container's process.
	TTY bool
	// Stdin keeps the process's stdin open for attach (the CRI backend;
	// the native one has no attach and gives the process none). With
	// StdinOnce it closes when the first attached client's does.
	Stdin, StdinOnce bool

	// PIDTargetID, if set, is the ID of a running container of the same
	// sandbox whose process namespace this container joins (an ephemeral
	// container's targetContainerName: CRI NamespaceMode TARGET).
	PIDTargetID string

	// LogPath is the absolute path of the file the container's stdout and
	// stderr are appended to. Required. Its directory is created if needed.
	LogPath string

	// Labels are stored with the container and can be filtered on
	// (ContainerFilter.Labels). Keys under ReservedLabelPrefix are reserved.
	Labels map[string]string
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name  string
	Value string
}

// Mount bind-mounts HostPath at ContainerPath, or, with Image set, mounts
// that image's content there (an image volume; HostPath empty, always
// read-only; needs ImageVolumes).
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
	// Image is an image on the node (its reference or ID) whose root
	// file system is mounted; ImageSubPath, if set, a directory in it to
	// mount instead of its root.
	Image, ImageSubPath string
	// Propagation is the mount's propagation (PropagationPrivate unless
	// set); HostToContainer and Bidirectional need the host path to be on
	// a shared mount (Bidirectional: shared; HostToContainer: shared or a
	// slave), else CreateContainer fails.
	Propagation MountPropagation
	// RecursiveReadOnly makes a read-only mount read-only recursively
	// (its submounts too; mount_setattr AT_RECURSIVE). Only with ReadOnly
	// and PropagationPrivate, and only if RecursiveReadOnlyMounts says
	// the runtime can.
	RecursiveReadOnly bool
}

// MountPropagation is a mount's propagation (CRI MountPropagation).
type MountPropagation string

const (
	// PropagationPrivate: no mount events cross (rprivate; the default).
	PropagationPrivate MountPropagation = ""
	// PropagationHostToContainer: mounts made on the host under the
	// host path appear in the container (rslave).
	PropagationHostToContainer MountPropagation = "HostToContainer"
	// PropagationBidirectional: and the container's mounts appear on the
	// host (rshared).
	PropagationBidirectional MountPropagation = "Bidirectional"
)

// Resources are the container's cgroup settings. Zero means unlimited (or,
// for CPURequestMilli, the runtime's default share).
type Resources struct {
	// CPULimitMilli is a CFS quota in thousandths of a CPU (500 = half a
	// core over each 100 ms period).
	CPULimitMilli int64
	// CPURequestMilli sets cpu shares (1024 per core), as Kubernetes does.
	CPURequestMilli int64
	// MemoryLimitBytes is the memory limit; exceeding it gets the container
	// OOM-killed (reason OOMKilled). Swap is limited to the same value where
	// the kernel accounts for it, so the limit cannot be dodged by swapping.
	MemoryLimitBytes int64
}

// Validate names the first bad field.
func (c ContainerConfig) Validate() error {
	switch {
	case c.Name == "":
		return fmt.Errorf("container config: name: required: %w", ErrInvalid)
	case c.Image == "":
		return fmt.Errorf("container %q: image: required: %w", c.Name, ErrInvalid)
	case c.LogPath == "":
		return fmt.Errorf("container %q: log path: required: %w", c.Name, ErrInvalid)
	case !filepath.IsAbs(c.LogPath):
		return fmt.Errorf("container %q: log path %q: must be absolute: %w", c.Name, c.LogPath, ErrInvalid)
	case c.Resources.CPULimitMilli < 0 || c.Resources.CPURequestMilli < 0 || c.Resources.MemoryLimitBytes < 0:
		return fmt.Errorf("container %q: resources: must not be negative: %w", c.Name, ErrInvalid)
	}
	for i, m := range c.Mounts {
		if m.Image != "" {
			if m.HostPath != "" || !m.ReadOnly {
				return fmt.Errorf("container %q: mounts[%d]: an image mount has no hostPath and is read-only: %w", c.Name, i, ErrInvalid)
			}
		} else if !filepath.IsAbs(m.HostPath) {
			return fmt.Errorf("container %q: mounts[%d].hostPath %q: must be absolute: %w", c.Name, i, m.HostPath, ErrInvalid)
		}
		switch m.Propagation {
		case PropagationPrivate, PropagationHostToContainer, PropagationBidirectional:
		default:
			return fmt.Errorf("container %q: mounts[%d].propagation %q: unknown: %w", c.Name, i, m.Propagation, ErrInvalid)
		}
		if m.RecursiveReadOnly && (!m.ReadOnly || m.Propagation != PropagationPrivate) {
			return fmt.Errorf("container %q: mounts[%d]: a recursive read-only mount is read-only and private: %w", c.Name, i, ErrInvalid)
		}
		if !path.IsAbs(m.ContainerPath) {
			return fmt.Errorf("container %q: mounts[%d].containerPath %q: must be absolute: %w", c.Name, i, m.ContainerPath, ErrInvalid)
		}
	}
	for i, e := range c.Env {
		if e.Name == "" || strings.Contains(e.Name, "=") {
			return fmt.Errorf("container %q: env[%d].name %q: must be non-empty without '=': %w", c.Name, i, e.Name, ErrInvalid)
		}
	}
	if err := c.Security.validate(c.Name); err != nil {
		return err
	}
	return checkUserLabels(fmt.Sprintf("container %q", c.Name), c.Labels)
}

func checkUserLabels(what string, labels map[string]string) error {
	for k := range labels {
		if strings.HasPrefix(k, ReservedLabelPrefix) {
			return fmt.Errorf("%s: label %q: prefix %s is reserved: %w", what, k, ReservedLabelPrefix, ErrInvalid)
		}
	}
	return nil
}

// ContainerState is the lifecycle state of a container.
type ContainerState string

const (
	ContainerCreated ContainerState = "Created"
	ContainerRunning ContainerState = "Running"
	ContainerExited  ContainerState = "Exited"
	// ContainerUnknown: the runtime cannot tell (paused, or mid-transition).
	ContainerUnknown ContainerState = "Unknown"
)

// Reasons set on exited containers.
const (
	ReasonCompleted = "Completed" // exit code 0
	ReasonError     = "Error"     // non-zero exit code
	ReasonOOMKilled = "OOMKilled" // the kernel OOM killer hit the container's cgroup
	// ReasonStartError: the process could not be started (no such
	// executable, bad working dir); ExitCode is 128.
	ReasonStartError = "StartError"
	// ReasonUnknown: the container was running when its task was lost
	// (runtime daemon or node restarted); ExitCode is 255.
	ReasonUnknown = "Unknown"
)

// ContainerStatus is what ContainerStatus and ListContainers report.
type ContainerStatus struct {
	ID        string
	SandboxID string
	Pod       PodRef
	Name      string
	Attempt   uint32

	// Image is the reference the container was created from; ImageID the
	// image's config digest (what Kubernetes shows as imageID).
	Image   string
	ImageID string

	State ContainerState
	// PID of the container's main process while Running.
	PID uint32

	CreatedAt  time.Time
	StartedAt  time.Time // zero until started
	FinishedAt time.Time // zero until exited
	ExitCode   int
	// Reason is set once Exited: ReasonCompleted, ReasonError,
	// ReasonOOMKilled or ReasonUnknown.
	Reason  string
	Message string

	LogPath string
	// LogFormat is how the runtime writes LogPath (LogOptions.Format).
	LogFormat LogFormat
	Labels    map[string]string // the caller's labels only
}

// ContainerFilter selects containers in ListContainers. Zero fields match all.
type ContainerFilter struct {
	ID        string
	SandboxID string
	PodUID    string
	State     ContainerState
	// Labels must all be present with these values.
	Labels map[string]string
}
