package runtime

import (
	"errors"
	"fmt"
)

// Sentinel errors returned (wrapped) by every Runtime implementation.
// Callers test them with errors.Is; the wrapping message says which object
// and which step failed.
var (
	// ErrNotFound: the sandbox, container, image or exec target does not
	// exist (or no longer exists).
	ErrNotFound = errors.New("not found")

	// ErrAlreadyExists: an object with that identity already exists.
	ErrAlreadyExists = errors.New("already exists")

	// ErrInvalid: the config is malformed (bad image reference, relative
	// mount path, reserved label key, ...). Retrying does not help.
	ErrInvalid = errors.New("invalid argument")

	// ErrImageNotPresent: the image is not on the node. The caller decides,
	// by pull policy, whether to call EnsureImage or to report
	// ErrImageNeverPull with an import hint.
	ErrImageNotPresent = errors.New("image not present on node")

	// ErrImagePull: pulling the image from its registry failed
	// (unreachable, unauthorized, unknown manifest, ...).
	ErrImagePull = errors.New("image pull failed")

	// ErrSandboxNotReady: a container was created in a stopped sandbox.
	ErrSandboxNotReady = errors.New("sandbox not ready")

	// ErrNotRunning: the operation (Exec, ContainerStats) needs a running
	// container, and it is not running.
	ErrNotRunning = errors.New("container not running")

	// ErrUnavailable: the runtime daemon cannot be reached. The kubelet
	// reports ContainerRuntimeNotReady while Version returns this.
	ErrUnavailable = errors.New("container runtime unavailable")

	// ErrNetworkSetup: a runtime that runs the pod network itself (CRI)
	// could not set it up in RunPodSandbox: a CNI plugin failed, or the
	// runtime has no usable CNI config. The message carries the plugin's
	// own; the kubelet reports it as layer CNI (FailedCreatePodSandBox).
	ErrNetworkSetup = errors.New("pod network setup failed")

	// ErrSandboxImage: the runtime's sandbox (pause) image is not on the
	// node and could not be pulled, so no sandbox can be made until it is
	// imported.
	ErrSandboxImage = errors.New("sandbox image not present on node")
)

// ErrUserNamespacesUnsupported: the runtime cannot put a pod in a user
// namespace of its own (hostUsers: false).
var ErrUserNamespacesUnsupported = errors.New("user namespaces not supported")

// UserNamespacesUnsupported is the error of a runtime (runtime handler)
// that cannot run a pod with hostUsers: false, with Kubernetes' kubelet
// message (its userns manager refuses the pod's sandbox so).
func UserNamespacesUnsupported(handler string) error {
	return &usernsError{handler: handler}
}

type usernsError struct{ handler string }

func (e *usernsError) Error() string {
	return fmt.Sprintf("RuntimeClass handler %q does not support user namespaces", e.handler)
}

func (e *usernsError) Is(target error) bool { return target == ErrUserNamespacesUnsupported }
