package troubleshoot

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/remote"
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
	fd := remote.Terminal(o.In, o.ErrOut, f.tty, f.stdin)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := v1.NewNodeAPIClient(c.Conn()).Exec(ctx)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	start := &v1.ExecStart{Namespace: ns, Pod: pod, Container: f.container, Command: command, Stdin: f.stdin, Tty: fd >= 0}
	res, err := remote.Session{In: o.In, Out: o.Out, ErrOut: o.ErrOut, TerminalFd: fd}.Run(ctx, s, start)
	switch {
	case errors.Is(err, context.Canceled):
		return cli.ExitCode(130) // interrupted (^C without -t), as a shell reports it
	case err != nil:
		return err
	case !res.Exited:
		return fmt.Errorf("exec: the stream ended without the command's exit status")
	case res.ExitCode != 0:
		fmt.Fprintf(o.ErrOut, "command terminated with exit code %d\n", res.ExitCode)
		return cli.ExitCode(res.ExitCode)
	}
	return nil
}
