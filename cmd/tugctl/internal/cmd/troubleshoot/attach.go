package troubleshoot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/remote"
)

type attachFlags struct {
	container      string
	stdin, tty     bool
	quiet          bool
	runningTimeout time.Duration
}

func newAttachCommand(o *cli.Options) *cobra.Command {
	f := &attachFlags{}
	cmd := &cobra.Command{
		Use:   "attach POD|pod/NAME|deploy/NAME|rs/NAME [-c CONTAINER] [-i] [-t] [-q]",
		Short: "Attach to the process of a running container",
		Long: `Attach to the main process of a running container, through the apiserver
and the pod's node: its output from now on, and with -i standard input
as its input (the container must have been made with stdin: true). A
container made with tty: true is attached through its terminal; with -i
and -t on a terminal this one becomes it (raw mode, size changes
followed). tugctl waits up to --pod-running-timeout for the pod to run.
It returns when the process exits or the stream ends (^C detaches,
leaving the process running).`,
		Example: `  tugctl attach web
  tugctl attach -it shell -c main
  tugctl attach deploy/worker -q`,
		Args:              cli.ExactArgs(1, "POD"),
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd.Context(), o, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.container, "container", "c", "", "container name (default: the kubectl.kubernetes.io/default-container annotation's, else the first)")
	fl.BoolVarP(&f.stdin, "stdin", "i", false, "pass standard input to the process")
	fl.BoolVarP(&f.tty, "tty", "t", false, "use the container's terminal as this one (needs -i and a terminal on standard input)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only what the process writes")
	fl.DurationVar(&f.runningTimeout, "pod-running-timeout", time.Minute, "how long to wait for the pod to run")
	return cmd
}

func runAttach(ctx context.Context, o *cli.Options, arg string, f *attachFlags) error {
	if f.runningTimeout <= 0 {
		return fmt.Errorf("--pod-running-timeout %s: must be positive", f.runningTimeout)
	}
	ns, name, err := podTarget(ctx, o, arg)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	pod, err := remote.WaitRunning(ctx, c, ns, name, f.runningTimeout)
	if err != nil && !errors.Is(err, remote.ErrPodCompleted) {
		return err
	}
	a := remote.Attach{Container: f.container, Stdin: f.stdin, TTY: f.tty, Quiet: f.quiet}
	_, err = a.Run(ctx, c, pod, remote.Session{In: o.In, Out: o.Out, ErrOut: o.ErrOut})
	if errors.Is(err, context.Canceled) {
		return cli.ExitCode(130) // ^C: tugctl goes, the process stays
	}
	return err
}
