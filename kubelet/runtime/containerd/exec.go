package containerd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/errdefs"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Exec implements runtime.ContainerRuntime: the command runs with the
// container's process settings (env, user, cwd) and the caller's streams.
func (r *Runtime) Exec(ctx context.Context, id string, req runtime.ExecRequest) (int, error) {
	ctx = r.ns(ctx)
	if len(req.Cmd) == 0 {
		return 0, fmt.Errorf("exec in container %s: empty command: %w", id, runtime.ErrInvalid)
	}
	ctr, _, err := r.loadContainer(ctx, id)
	if err != nil {
		return 0, err
	}
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		return 0, fmt.Errorf("exec in container %s: %w", id, runtime.ErrNotRunning)
	}
	if err != nil {
		return 0, wrap(err, "exec in container %s", id)
	}
	if st, err := task.Status(ctx); err != nil || st.Status != client.Running {
		return 0, fmt.Errorf("exec in container %s: %w", id, runtime.ErrNotRunning)
	}
	spec, err := ctr.Spec(ctx)
	if err != nil {
		return 0, wrap(err, "exec in container %s", id)
	}
	pspec := *spec.Process
	pspec.Args = req.Cmd
	pspec.Terminal = req.TTY

	stdinDone := make(chan struct{})
	var stdin io.Reader
	if req.Stdin != nil {
		stdin = &eofNotifier{r: req.Stdin, done: stdinDone}
	}
	stderr := req.Stderr
	if req.TTY {
		stderr = nil
	}
	ioOpts := []cio.Opt{cio.WithStreams(stdin, orDiscard(req.Stdout), orDiscard(stderr))}
	if req.TTY {
		ioOpts = append(ioOpts, cio.WithTerminal)
	}
	if r.cfg.FIFODir != "" {
		ioOpts = append(ioOpts, cio.WithFIFODir(r.cfg.FIFODir))
	}

	// The exec outlives a cancelled ctx just long enough to be killed and
	// cleaned up.
	bg := context.WithoutCancel(ctx)
	execID := "exec-" + newID()[:12]
	proc, err := task.Exec(bg, execID, &pspec, cio.NewCreator(ioOpts...))
	if err != nil {
		return 0, wrap(err, "exec in container %s", id)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(bg, r.cfg.KillTimeout)
		defer cancel()
		if _, err := proc.Delete(dctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			r.logger.Warn("deleting exec process", "container", id, "exec", execID, "err", err)
		}
	}()
	exited, err := proc.Wait(bg)
	if err != nil {
		return 0, wrap(err, "exec in container %s: wait", id)
	}
	if err := proc.Start(bg); err != nil {
		return 0, wrap(err, "exec in container %s: start %q", id, req.Cmd[0])
	}
	if req.Stdin != nil {
		go func() {
			select {
			case <-stdinDone:
				if err := proc.CloseIO(bg, client.WithStdinCloser); err != nil && !errdefs.IsNotFound(err) {
					r.logger.Debug("closing exec stdin", "exec", execID, "err", err)
				}
			case <-exited:
			}
		}()
	}
	if req.TTY && req.Resize != nil {
		resizeCtx, stopResize := context.WithCancel(bg)
		defer stopResize()
		go func() {
			for {
				select {
				case <-resizeCtx.Done():
					return
				case sz, ok := <-req.Resize:
					if !ok {
						return
					}
					if err := proc.Resize(resizeCtx, uint32(sz.Width), uint32(sz.Height)); err != nil && resizeCtx.Err() == nil {
						r.logger.Debug("resizing exec terminal", "exec", execID, "err", err)
					}
				}
			}
		}()
	}

	var status client.ExitStatus
	select {
	case status = <-exited:
	case <-ctx.Done():
		_ = proc.Kill(bg, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(r.cfg.KillTimeout):
		}
		proc.IO().Cancel()
		return 0, fmt.Errorf("exec in container %s: %w", id, ctx.Err())
	}
	proc.IO().Wait() // all output copied
	code, _, err := status.Result()
	if err != nil {
		return 0, wrap(err, "exec in container %s", id)
	}
	return int(code), nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// eofNotifier closes done when r returns EOF (or any error), so the
// process's stdin can be closed.
type eofNotifier struct {
	r    io.Reader
	done chan struct{}
	shut bool
}

func (e *eofNotifier) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !e.shut {
		e.shut = true
		close(e.done)
	}
	if errors.Is(err, io.EOF) {
		return n, io.EOF
	}
	return n, err
}
