package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// exec and attach over SPDY: the remote command protocol (v4 down to
// v1.channel.k8s.io) of kubectl before 1.30, of kubectl ≥ 1.30 when it
// falls back, and of client-go's SPDY executor, which many tools still
// use. The streams are served by k8s.io/cri-streaming's ServeExec and
// ServeAttach (the kubelet's own server side of the protocol), with the
// relay to NodeAPI.Exec and NodeAPI.Attach as their executor.

// spdyStreamTimeout bounds the wait for the client's streams after the
// upgrade; spdyIdleTimeout closes a connection with no traffic (kubectl
// pings every few seconds).
const (
	spdyStreamTimeout = 30 * time.Second
	spdyIdleTimeout   = 4 * time.Hour
)

func (h *Handler) execSPDY(w http.ResponseWriter, r *http.Request, sub string, start *v1.ExecStart) error {
	// PodExecOptions' parameters (the kubelet's own names differ).
	opts := &remotecommand.Options{Stdin: boolParam(r, "stdin"), Stdout: boolParam(r, "stdout"), Stderr: boolParam(r, "stderr"), TTY: boolParam(r, "tty")}
	if opts.TTY {
		opts.Stderr = false // a terminal has one output
	}
	if !opts.Stdin && !opts.Stdout && !opts.Stderr {
		return apierrors.New(apierrors.ErrBadRequest, "you must specify at least 1 of stdin, stdout, stderr")
	}
	e := spdyExec{h: h, sub: sub, start: start}
	if sub == "attach" {
		remotecommand.ServeAttach(w, r, e, start.Pod, "", start.Container, opts, spdyIdleTimeout, spdyStreamTimeout, remotecommand.SupportedStreamingProtocols)
	} else {
		remotecommand.ServeExec(w, r, e, start.Pod, "", start.Container, start.Command, opts, spdyIdleTimeout, spdyStreamTimeout, remotecommand.SupportedStreamingProtocols)
	}
	return nil // ServeExec answered the client
}

// spdyExec is remotecommand's Executor and Attacher.
type spdyExec struct {
	h     *Handler
	sub   string
	start *v1.ExecStart
}

func (e spdyExec) ExecInContainer(ctx context.Context, _, _, _ string, _ []string, in io.Reader, out, errOut io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	return e.run(ctx, in, out, errOut, resize)
}

func (e spdyExec) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errOut io.WriteCloser, _ bool, resize <-chan remotecommand.TerminalSize) error {
	return e.run(ctx, in, out, errOut, resize)
}

// run relays the streams; a non-zero exit of an exec is a
// utilexec.ExitError, which ServeExec reports as NonZeroExitCode with the
// code. An attach returns nil when its process exited, whatever the code,
// as a runtime's attach does.
func (e spdyExec) run(ctx context.Context, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	inputs := make(chan *v1.ExecInput, 16)
	inputs <- &v1.ExecInput{Start: e.start}
	put := func(m *v1.ExecInput) bool {
		select {
		case inputs <- m:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if in != nil {
		go func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := in.Read(buf)
				if n > 0 && !put(&v1.ExecInput{Stdin: append([]byte(nil), buf[:n]...)}) {
					return
				}
				if err != nil {
					put(&v1.ExecInput{StdinEof: true})
					return
				}
			}
		}()
	}
	if resize != nil {
		go func() {
			for {
				select {
				case sz, ok := <-resize:
					if !ok || !put(&v1.ExecInput{Resize: &v1.TerminalSize{Width: uint32(sz.Width), Height: uint32(sz.Height)}}) {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	exited, code, err := e.h.runExec(ctx, e.sub, e.start, inputs, writeTo(out), writeTo(errOut))
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		return err
	case exited && code != 0 && e.sub != "attach": // an attach that ended is a Success (exitStatus)
		return utilexec.CodeExitError{Err: fmt.Errorf("exit status %d", code), Code: int(code)}
	}
	return nil
}

// writeTo writes to w, or drops the bytes when the client asked for no
// such stream.
func writeTo(w io.Writer) func([]byte) error {
	return func(b []byte) error {
		if w == nil {
			return nil
		}
		_, err := w.Write(b)
		return err
	}
}
