package runtime

import (
	"context"
	"io"
	"time"
)

// Runtime is what the kubelet's pod workers drive. It is CRI-shaped: pod
// sandboxes, containers in them, and the images they run. Implementations
// (package kubelet/runtime/containerd) keep no state of their own beyond what
// the runtime daemon persists, so a restarted kubelet sees the same sandboxes
// and containers.
//
// Errors wrap the sentinels of this package (see errors.go); a method whose
// target does not exist returns ErrNotFound unless it says otherwise. If the
// daemon is unreachable every method returns an error wrapping
// ErrUnavailable.
type Runtime interface {
	// Version names the runtime and its version, for the Node's nodeInfo.
	// An error (ErrUnavailable) means the runtime is not ready.
	Version(ctx context.Context) (VersionInfo, error)

	SandboxRuntime
	ContainerRuntime
	ImageService
}

// SandboxRuntime manages pod sandboxes (see the package documentation for
// what a sandbox is in Tugboat).
type SandboxRuntime interface {
	// RunPodSandbox records a Ready sandbox for cfg and returns its ID. The
	// network namespace named by cfg.NetNSPath must exist. The ID is also
	// the CNI container ID the caller uses for the pod's network.
	// ErrInvalid if cfg misses the pod's uid, name or namespace.
	RunPodSandbox(ctx context.Context, cfg SandboxConfig) (string, error)

	// StopPodSandbox stops every container of the sandbox (SIGKILL, no grace:
	// graceful stops are the caller's job, with StopContainer, before this)
	// and marks it NotReady. Idempotent; nil for a sandbox that does not
	// exist, so every teardown path can call it.
	StopPodSandbox(ctx context.Context, id string) error

	// RemovePodSandbox stops and removes every container of the sandbox
	// (with their snapshots), the sandbox record and its cgroup parent.
	// Idempotent: nil for a sandbox that does not exist.
	RemovePodSandbox(ctx context.Context, id string) error

	// PodSandboxStatus returns the sandbox's status, or ErrNotFound.
	PodSandboxStatus(ctx context.Context, id string) (SandboxStatus, error)

	// ListPodSandbox returns the sandboxes matching filter (all for a zero
	// filter), in no particular order.
	ListPodSandbox(ctx context.Context, filter SandboxFilter) ([]SandboxStatus, error)
}

// ContainerRuntime manages the containers in sandboxes.
type ContainerRuntime interface {
	// CreateContainer creates (does not start) a container in the sandbox
	// and returns its ID. ErrNotFound if the sandbox does not exist,
	// ErrSandboxNotReady if it was stopped, ErrImageNotPresent if
	// cfg.Image is not on the node, ErrInvalid for a bad config.
	CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (string, error)

	// ImageVolumes reports whether CreateContainer can mount images
	// (Mount.Image): nil if it can, else an error saying why not (the
	// runtime or its version), which the kubelet shows the pod.
	ImageVolumes(ctx context.Context) error

	// RecursiveReadOnlyMounts reports whether CreateContainer can make
	// recursive read-only mounts (Mount.RecursiveReadOnly): nil if it
	// can, else an error saying why not (the runtime or its version).
	RecursiveReadOnlyMounts(ctx context.Context) error

	// StartContainer starts a created container; its output goes to
	// cfg.LogPath. Starting a container that already ran is an error
	// (containers are not restarted: the caller creates the next attempt).
	StartContainer(ctx context.Context, id string) error

	// StopContainer sends the container's stop signal (SIGTERM unless the
	// image says otherwise), waits up to grace for it to exit, then sends
	// SIGKILL and waits for the exit. The exit status is kept. Idempotent:
	// nil for a container that is not running; ErrNotFound if it does not
	// exist. A cancelled ctx ends the wait early and kills.
	StopContainer(ctx context.Context, id string, grace time.Duration) error

	// RemoveContainer kills the container if it runs and removes it with
	// its snapshot. Idempotent: nil if it does not exist. The log file is
	// left in place (it belongs to the caller).
	RemoveContainer(ctx context.Context, id string) error

	// ContainerStatus returns the container's status, or ErrNotFound. For
	// an exited container it also releases the runtime's per-process
	// resources (the containerd shim), keeping the exit status.
	ContainerStatus(ctx context.Context, id string) (ContainerStatus, error)

	// ListContainers returns the containers matching filter (all for a
	// zero filter), with the same status as ContainerStatus.
	ListContainers(ctx context.Context, filter ContainerFilter) ([]ContainerStatus, error)

	// UpdateContainerResources sets the cgroup limits of a running (or
	// created) container to res in place, without restarting it (an
	// in-place resize). A zero field lifts that limit. ErrNotFound if the
	// container does not exist; ErrNotRunning if it exited. The kernel may
	// refuse a memory limit below the container's usage: an error.
	UpdateContainerResources(ctx context.Context, id string, res Resources) error

	// ContainerStats returns the cgroup usage of a running container;
	// ErrNotRunning if it is not running.
	ContainerStats(ctx context.Context, id string) (ContainerStats, error)

	// Exec runs req.Cmd in the running container, streams its I/O, and
	// returns its exit code once it has exited and its output has been
	// copied. ErrNotRunning if the container is not running; a command that
	// cannot be started (not found in the image) returns an error, not an
	// exit code. Cancelling ctx kills the process.
	Exec(ctx context.Context, id string, req ExecRequest) (exitCode int, err error)
}

// RegistryAuth is what a pull presents to the registry: a user name and
// password, the fields of a registry entry of a pod's image pull secret
// (kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg), as the
// kubelet's keyring found it for the image.
type RegistryAuth struct {
	Username, Password string
}

// ImageService manages the images on the node. Image references are
// normalised the Docker way ("busybox" is docker.io/library/busybox:latest).
// Applying a pull policy is the caller's job: IfNotPresent calls ImageStatus
// and EnsureImage only on ErrImageNotPresent; Never calls only ImageStatus.
type ImageService interface {
	// EnsureImage pulls ref from its registry (plain HTTP for the hosts the
	// implementation was configured with), presenting auth (nil: none),
	// and unpacks it, so containers can be created from it. ErrImagePull
	// wraps registry failures (a refused credential too, with the
	// registry's message); ErrInvalid a malformed reference.
	EnsureImage(ctx context.Context, ref string, auth *RegistryAuth) (ImageStatus, error)

	// ImportImage imports every image of an OCI image-layout or
	// docker-archive (`docker save`) tar stream and unpacks it. It returns
	// the named images found; ErrInvalid if the stream holds no named image.
	ImportImage(ctx context.Context, r io.Reader) ([]ImageStatus, error)

	// ImageStatus describes the image ref; ErrImageNotPresent if it is not
	// on the node.
	ImageStatus(ctx context.Context, ref string) (ImageStatus, error)

	// ListImages lists the images on the node.
	ListImages(ctx context.Context) ([]ImageStatus, error)

	// RemoveImage removes the image name ref (the content is garbage
	// collected once no name or container refers to it). Idempotent.
	RemoveImage(ctx context.Context, ref string) error
}
