package server

import (
	"context"
	"errors"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Attacher is implemented by runtimes that can attach to a running
// container's main process (the CRI backend, through the runtime's
// streaming server). Attach streams the process's output from now on to
// req.Stdout (and req.Stderr without a terminal) and req.Stdin to it (nil:
// none), following req.Resize, until the process exits — then it returns
// its exit code — or ctx ends or the stream is detached: then -1. req.Cmd
// is empty. ErrNotRunning if the container is not running.
type Attacher interface {
	Attach(ctx context.Context, containerID string, req runtime.ExecRequest) (int, error)
}

// Attach implements NodeAPI.Attach: the client's streams are joined to the
// container's own process, as kubectl attach joins them. Stdin is only
// passed to a container made with stdin: true, and the terminal is the
// container's (tty: true in its spec), whatever the client asked.
func (s *Server) Attach(stream v1.NodeAPI_AttachServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil {
		return errorf(apierrors.ErrInvalid, "start: the first attach message must name the pod")
	}
	if len(start.Command) > 0 {
		return errorf(apierrors.ErrInvalid, "start.command: attach connects to the container's own process: no command")
	}
	pod, name, err := s.pod(start.Namespace, start.Pod, start.Container)
	if err != nil {
		return grpcErr(err)
	}
	var spec *v1.Container
	for _, c := range pod.GetSpec().GetContainers() {
		if c.Name == name {
			spec = c
		}
	}
	for _, e := range pod.GetSpec().GetEphemeralContainers() {
		if e.Name == name {
			spec = e.AsContainer()
		}
	}
	if spec == nil {
		return errorf(apierrors.ErrInvalid, "container %q in pod %q is an init container: attach to a regular one", name, pod.GetMetadata().GetName())
	}
	if start.Stdin && !spec.Stdin {
		return errorf(apierrors.ErrInvalid, "stdin: container %q in pod %q was not made with stdin: true, so it takes no input (attach without -i)", name, pod.GetMetadata().GetName())
	}
	start.Tty = spec.Tty
	a, ok := s.cfg.Streams.(Attacher)
	if !ok {
		return errorf(apierrors.ErrInvalid, "attach: the container runtime backend of node %s cannot attach to a running process (the CRI backend can); use exec instead", s.cfg.NodeName)
	}
	as, err := s.attempts(ctx, pod, name)
	if err != nil {
		return grpcErr(err)
	}
	if len(as) == 0 || as[0].State != runtime.ContainerRunning {
		return errorf(apierrors.ErrInvalid, "container %q in pod %q is not running", name, pod.GetMetadata().GetName())
	}
	code, err := streamIO(ctx, cancel, stream, start, func(req runtime.ExecRequest) (int, error) {
		return a.Attach(ctx, as[0].ID, req)
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return grpcErr(ctx.Err())
	case errors.Is(err, runtime.ErrNotRunning) || errors.Is(err, runtime.ErrNotFound):
		return errorf(apierrors.ErrInvalid, "container %q in pod %q is not running", name, pod.GetMetadata().GetName())
	case err != nil:
		return errorf(apierrors.ErrUnavailable, "attach to container %q in pod %q: %v", name, pod.GetMetadata().GetName(), err)
	case code < 0:
		return nil // detached
	}
	return stream.Send(&v1.ExecOutput{Exited: true, ExitCode: int32(code)})
}
