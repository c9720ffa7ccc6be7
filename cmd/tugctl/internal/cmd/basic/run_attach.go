package basic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/remote"
)

// checkAttach refuses the combinations kubectl run refuses, with its
// words.
func (f *runFlags) checkAttach() error {
	switch {
	case f.tty && !f.stdin:
		return fmt.Errorf("-i/--stdin is required for containers with -t/--tty=true")
	case f.rm && !f.attach:
		return fmt.Errorf("--rm should only be used for attached containers")
	case f.attach && f.dryRun.On():
		return fmt.Errorf("--dry-run=[server|client] can't be used with attached containers options (--attach, --stdin, or --tty)")
	case f.attach && f.output != "":
		return fmt.Errorf("--output: the pod's process writes to the output when attached; -o can't be used with --attach, --stdin or --tty")
	case f.leaveStdinOpen && !f.stdin:
		return fmt.Errorf("--leave-stdin-open: needs -i/--stdin")
	case f.runningTimeout <= 0:
		return fmt.Errorf("--pod-running-timeout %s: must be positive", f.runningTimeout)
	}
	return nil
}

// runAttached is run --attach: create the pod, wait for it to run,
// attach to its process (or print its log if it already ended), then
// for restart policies Never and OnFailure wait for the pod to finish and
// exit with its container's status; --rm deletes the pod last.
func runAttached(ctx context.Context, o *cli.Options, pod *v1.Pod, f *runFlags) (err error) {
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	pod.Metadata.Namespace = ns
	k, err := kinds.ForMessage(pod)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	created, err := client.For[*v1.Pod](c).Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("pods %q already exists", pod.Metadata.Name)
	}
	if err != nil {
		return err
	}
	if f.rm {
		defer func() {
			// Also after ^C: the pod is this command's to remove.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			t := deleteTarget{kind: k, namespace: ns, name: created.Metadata.Name}
			if derr := deleteOne(dctx, o, t, client.DeleteOptions{}, &deleteFlags{wait: true}); derr != nil {
				err = errors.Join(err, derr)
			}
		}()
	}
	name := created.Metadata.Name
	running, err := remote.WaitRunning(ctx, c, ns, name, f.runningTimeout)
	attached := err == nil
	if err != nil && !errors.Is(err, remote.ErrPodCompleted) {
		return err
	}
	if attached {
		a := remote.Attach{Container: name, Stdin: f.stdin, TTY: f.tty, Quiet: f.quiet}
		_, err = a.Run(ctx, c, running, remote.Session{In: o.In, Out: o.Out, ErrOut: o.ErrOut})
		switch {
		case errors.Is(err, context.Canceled):
			return cli.ExitCode(130)
		case err != nil && strings.Contains(err.Error(), "is not running"):
			attached = false // it ended in between: its log is what it wrote
		case err != nil:
			return err
		}
	}
	if !attached {
		req := &v1.LogsRequest{Namespace: ns, Pod: name, Container: name}
		if err := remote.CopyLog(ctx, c, req, o.Out); err != nil {
			return err
		}
	}
	if f.leaveStdinOpen || f.restart == "Always" {
		return nil // the process goes on; its status is not this command's
	}
	return podExit(ctx, o, c, ns, name, f)
}

// podExit waits for the pod to finish (OnFailure: to succeed) and turns
// its container's status into tugctl's, as kubectl run does.
func podExit(ctx context.Context, o *cli.Options, c *client.Client, ns, name string, f *runFlags) error {
	var pod *v1.Pod
	err := wait.Until(ctx, f.runningTimeout, func(ctx context.Context) error {
		p, err := client.For[*v1.Pod](c).Get(ctx, ns, name)
		if err != nil {
			return err
		}
		pod = p
		ph := p.GetStatus().GetPhase()
		if ph == "Succeeded" || (ph == "Failed" && f.restart == "Never") {
			return nil
		}
		return fmt.Errorf("pod %s is %s", name, ph)
	})
	if err != nil {
		return fmt.Errorf("waiting for pod %s/%s to finish: %w", ns, name, err)
	}
	if pod.Status.Phase == "Succeeded" {
		return nil
	}
	var term *v1.ContainerStateTerminated
	if cs := pod.Status.GetContainerStatuses(); len(cs) > 0 {
		term = cs[0].GetState().GetTerminated()
	}
	if term == nil || term.ExitCode == 0 {
		return fmt.Errorf("pod %s/%s failed with unknown exit code", ns, name)
	}
	fmt.Fprintf(o.ErrOut, "pod %s/%s terminated (%s)\n%s", ns, name, term.Reason, term.Message)
	return cli.ExitCode(term.ExitCode)
}
