package troubleshoot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type execFlags struct {
	container string
	stdin     bool
	tty       bool
}

func newExecCommand(o *cli.Options) *cobra.Command {
	f := &execFlags{}
	cmd := &cobra.Command{
		Use:   "exec POD|pod/NAME|deploy/NAME|rs/NAME [-c CONTAINER] [-i] [-t] -- COMMAND [ARGS...]",
		Short: "Run a command in a container",
		Long: `Run a command in a running container, through the apiserver and the pod's
node. -i passes standard input; -t (with -i, on a terminal) makes the
command's terminal this one: raw mode, size changes followed. tugctl exits
with the command's exit status.`,
		Example: `  tugctl exec nginx -- ls /usr/share/nginx/html
  tugctl exec -it deploy/web -c app -- sh
  echo hello | tugctl exec -i nginx -- cat`,
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			pod, command, err := execArgs(args, cmd.ArgsLenAtDash())
			if err != nil {
				return err
			}
			return runExec(cmd.Context(), o, pod, command, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "container", "c", "", "container name (default: the pod's only container)")
	fl.BoolVarP(&f.stdin, "stdin", "i", false, "pass standard input to the command")
	fl.BoolVarP(&f.tty, "tty", "t", false, "give the command a terminal (needs -i and a terminal on standard input)")
	return cmd
}

// execArgs splits POD and the command at "--" (dash is the number of
// arguments before it, -1 without one: then the command follows POD).
func execArgs(args []string, dash int) (string, []string, error) {
	switch {
	case len(args) == 0 || dash == 0:
		return "", nil, fmt.Errorf("exec: name the pod: tugctl exec POD -- COMMAND")
	case dash > 1:
		return "", nil, fmt.Errorf("exec: one POD before --, got %d arguments: %v", dash, args[:dash])
	case len(args) == 1:
		return "", nil, fmt.Errorf("exec: no command: tugctl exec %s -- COMMAND [ARGS...]", args[0])
	}
	return args[0], args[1:], nil
}

// execStream serializes sends on an exec stream (stdin and resizes come
// from different goroutines).
type execStream struct {
	mu sync.Mutex
	s  v1.NodeAPI_ExecClient
}

func (e *execStream) send(in *v1.ExecInput) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s.Send(in)
}

func runExec(ctx context.Context, o *cli.Options, podArg string, command []string, f *execFlags) error {
	ns, pod, err := podTarget(ctx, o, podArg)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	// As kubectl: -t needs -i, and a terminal to read from.
	tty, fd := f.tty && f.stdin, -1
	if tty {
		var ok bool
		if fd, ok = cli.TerminalFd(o.In); !ok {
			fmt.Fprintln(o.ErrOut, "Unable to use a TTY - input is not a terminal or the right kind of file")
			tty = false
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	raw, err := v1.NewNodeAPIClient(c.Conn()).Exec(ctx)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	s := &execStream{s: raw}
	start := &v1.ExecStart{Namespace: ns, Pod: pod, Container: f.container, Command: command, Stdin: f.stdin, Tty: tty}
	if err := s.send(&v1.ExecInput{Start: start}); err != nil {
		return apierrors.FromGRPC(err)
	}
	restore := func() {}
	defer func() { restore() }()
	if tty {
		r, err := rawMode(fd)
		if err != nil {
			return fmt.Errorf("--tty: %w", err)
		}
		restore = r
		go watchSize(ctx, fd, func(sz *v1.TerminalSize) error { return s.send(&v1.ExecInput{Resize: sz}) })
	}
	if f.stdin {
		go copyStdin(o.In, s)
	}
	code, err := execOutput(ctx, o, raw)
	restore()
	restore = func() {}
	if errors.Is(err, context.Canceled) {
		return cli.ExitCode(130) // interrupted (^C without -t), as a shell reports it
	}
	if err != nil {
		return err
	}
	if code != 0 {
		fmt.Fprintf(o.ErrOut, "command terminated with exit code %d\n", code)
		return cli.ExitCode(code)
	}
	return nil
}

// copyStdin sends in as stdin messages, then stdin_eof.
func copyStdin(in io.Reader, s *execStream) {
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

// execOutput copies the command's output until its last message and
// returns its exit code.
func execOutput(ctx context.Context, o *cli.Options, s v1.NodeAPI_ExecClient) (int, error) {
	for {
		out, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("exec: the stream ended without the command's exit status")
		}
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, apierrors.FromGRPC(err)
		}
		if len(out.Stdout) > 0 {
			if _, err := o.Out.Write(out.Stdout); err != nil {
				return 0, err
			}
		}
		if len(out.Stderr) > 0 {
			if _, err := o.ErrOut.Write(out.Stderr); err != nil {
				return 0, err
			}
		}
		if out.Exited {
			return int(out.ExitCode), nil
		}
	}
}
