// Package remote is the client's end of a session with a process in a
// container, through the apiserver's relay to the pod's kubelet: exec's
// new command, attach's container process, and what builds on them (cp's
// tar, run's attached pod). It sends the start, passes standard input,
// copies the process's output and, with a terminal, puts the local one in
// raw mode and follows its size.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Stream is an exec or attach stream (NodeAPI_ExecClient and
// NodeAPI_AttachClient are the same type).
type Stream = v1.NodeAPI_ExecClient

// Session says what a session passes between the local streams and the
// remote process.
type Session struct {
	// In is sent to the process when Start.Stdin is set, then its end.
	In          io.Reader
	Out, ErrOut io.Writer
	// TerminalFd, when >= 0, is the local terminal (In's) to put in raw
	// mode for the session and whose size changes are sent (Start.Tty).
	TerminalFd int
}

// Result is how a session ended.
type Result struct {
	// Exited: the process exited, with ExitCode. Otherwise the stream
	// ended without it (attach: the client detached, or the container
	// went away).
	Exited   bool
	ExitCode int
}

// Terminal decides whether a session gets a terminal, as kubectl does: it
// must be wanted (-t) with standard input passed (-i) and in must be a
// terminal; when it is wanted but in is none, it says so on errOut and
// the session goes on without. It returns in's fd, or -1.
func Terminal(in io.Reader, errOut io.Writer, tty, stdin bool) int {
	if !tty || !stdin {
		return -1
	}
	fd, ok := cli.TerminalFd(in)
	if !ok {
		fmt.Fprintln(errOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
		return -1
	}
	return fd
}

// Run sends start on s and runs the session until the process exits or
// the stream ends. Cancelling ctx ends it with ctx.Err().
func (se Session) Run(ctx context.Context, s Stream, start *v1.ExecStart) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st := &sender{s: s}
	if err := st.send(&v1.ExecInput{Start: start}); err != nil {
		return Result{}, apierrors.FromGRPC(err)
	}
	if start.Tty && se.TerminalFd >= 0 {
		restore, err := rawMode(se.TerminalFd)
		if err != nil {
			return Result{}, fmt.Errorf("--tty: %w", err)
		}
		defer restore()
		go watchSize(ctx, se.TerminalFd, func(sz *v1.TerminalSize) error { return st.send(&v1.ExecInput{Resize: sz}) })
	}
	if start.Stdin {
		go copyStdin(se.In, st)
	}
	return se.output(ctx, s)
}

// sender serializes sends on a stream (stdin and resizes come from
// different goroutines).
type sender struct {
	mu sync.Mutex
	s  Stream
}

func (e *sender) send(in *v1.ExecInput) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s.Send(in)
}

// copyStdin sends in as stdin messages, then stdin_eof.
func copyStdin(in io.Reader, s *sender) {
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			if s.send(&v1.ExecInput{Stdin: append([]byte(nil), buf[:n]...)}) != nil {
				return
			}
		}
		if err != nil {
			_ = s.send(&v1.ExecInput{StdinEof: true})
			return
		}
	}
}

// output copies the process's output until its last message or the
// stream's end.
func (se Session) output(ctx context.Context, s Stream) (Result, error) {
	for {
		out, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return Result{}, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return Result{}, ctx.Err()
			}
			return Result{}, apierrors.FromGRPC(err)
		}
		if len(out.Stdout) > 0 {
			if _, err := se.Out.Write(out.Stdout); err != nil {
				return Result{}, err
			}
		}
		if len(out.Stderr) > 0 {
			if _, err := se.ErrOut.Write(out.Stderr); err != nil {
				return Result{}, err
			}
		}
		if out.Exited {
			return Result{Exited: true, ExitCode: int(out.ExitCode)}, nil
		}
	}
}
