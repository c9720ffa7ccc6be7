package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Exec implements NodeAPI.Exec: the first message starts the command in
// the container's current attempt; later ones carry stdin, its EOF, and
// terminal resizes. Output goes back as it comes; the last message says
// the command exited, with its exit code. A command that cannot be started
// (not in the image) exits 126 with the reason on stderr, as kubectl
// shows it.
func (s *Server) Exec(stream v1.NodeAPI_ExecServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	start := first.GetStart()
	if start == nil || len(start.Command) == 0 {
		return errorf(apierrors.ErrInvalid, "start.command: the first exec message must carry the command")
	}
	pod, name, err := s.pod(start.Namespace, start.Pod, start.Container)
	if err != nil {
		return grpcErr(err)
	}
	as, err := s.attempts(ctx, pod, name)
	if err != nil {
		return grpcErr(err)
	}
	if len(as) == 0 || as[0].State != runtime.ContainerRunning {
		return errorf(apierrors.ErrInvalid, "container %q in pod %q is not running", name, pod.GetMetadata().GetName())
	}

	code, err := streamIO(ctx, cancel, stream, start, func(req runtime.ExecRequest) (int, error) {
		req.Cmd = start.Command
		return s.cfg.Runtime.Exec(ctx, as[0].ID, req)
	})
	if err != nil {
		if ctx.Err() != nil {
			return grpcErr(ctx.Err())
		}
		if errors.Is(err, runtime.ErrNotRunning) || errors.Is(err, runtime.ErrNotFound) {
			return errorf(apierrors.ErrInvalid, "container %q in pod %q is not running", name, pod.GetMetadata().GetName())
		}
		msg := fmt.Sprintf("exec %q in container %q: %v\n", strings.Join(start.Command, " "), name, err)
		if err := stream.Send(&v1.ExecOutput{Stderr: []byte(msg)}); err != nil {
			return err
		}
		code = 126
	}
	return stream.Send(&v1.ExecOutput{Exited: true, ExitCode: int32(code)})
}

// streamIO runs a process through run with the I/O of an exec-shaped
// stream: stdout and stderr go back as they come (sends serialized), the
// client's later messages carry stdin, its end and terminal resizes, and a
// client that goes away cancels ctx (killing an exec'd command). It
// returns run's result; the caller sends the last message.
func streamIO(ctx context.Context, cancel context.CancelFunc, stream grpc.BidiStreamingServer[v1.ExecInput, v1.ExecOutput], start *v1.ExecStart, run func(runtime.ExecRequest) (int, error)) (int, error) {
	var sendMu sync.Mutex
	send := func(out *v1.ExecOutput) error {
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(out)
	}
	req := runtime.ExecRequest{
		TTY:    start.Tty,
		Stdout: &chunkWriter{send: func(b []byte) error { return send(&v1.ExecOutput{Stdout: b}) }},
		Stderr: &chunkWriter{send: func(b []byte) error { return send(&v1.ExecOutput{Stderr: b}) }},
	}
	var stdinW *io.PipeWriter
	if start.Stdin {
		var r *io.PipeReader
		r, stdinW = io.Pipe()
		req.Stdin = r
	}
	resize := make(chan runtime.TerminalSize, 4)
	if start.Tty {
		req.Resize = resize
	}
	// Read the client's messages until it closes its side.
	go func() {
		defer func() {
			if stdinW != nil {
				stdinW.Close()
			}
		}()
		for {
			in, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				cancel() // the client went away: kill the command
				return
			}
			if len(in.Stdin) > 0 && stdinW != nil {
				if _, err := stdinW.Write(in.Stdin); err != nil {
					stdinW = nil
				}
			}
			if in.StdinEof && stdinW != nil {
				stdinW.Close()
				stdinW = nil
			}
			if r := in.GetResize(); r != nil && start.Tty {
				select {
				case resize <- runtime.TerminalSize{Width: uint16(r.Width), Height: uint16(r.Height)}:
				default:
				}
			}
		}
	}()
	return run(req)
}
