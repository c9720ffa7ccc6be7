package troubleshoot

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/remote"
)

// debug is kubectl debug's pod mode with an ephemeral container: the
// container is added to the running pod through pods/ephemeralcontainers
// (a strategic merge patch, as kubectl sends), then, with -i or --attach,
// tugctl waits for it to run and attaches to it as tugctl attach does (or
// prints its log if it already ended). kubectl's other modes (--copy-to,
// a copy of the pod; node/NAME) and --profile are not implemented: their
// flags are not defined, so tugctl refuses them as unknown flags.

type debugFlags struct {
	image, container, target, pullPolicy string
	env                                  []string
	stdin, tty, quiet                    bool
	attach                               bool
	argumentsOnly                        bool
	runningTimeout                       time.Duration
}

func newDebugCommand(o *cli.Options) *cobra.Command {
	f := &debugFlags{}
	cmd := &cobra.Command{
		Use:   "debug POD|pod/NAME|deploy/NAME --image=IMAGE [-c NAME] [--target=CONTAINER] [-i] [-t] [-- COMMAND [ARGS...]]",
		Short: "Add a debugging container to a running pod",
		Long: `Add an ephemeral container to a running pod (kubectl debug's default mode):
it runs IMAGE in the pod's sandbox — its network, its volumes if
mounted — without restarting the pod, once, never restarted. With
--target it joins that container's process namespace, so ps shows the
target's processes. With -i (or --attach) tugctl waits for the container
to run and attaches to it; -it gives it this terminal. Ephemeral
containers cannot be changed or removed: they go with the pod. tugctl
describe pod lists them.`,
		Example: `  tugctl debug -it web --image=busybox --target=app
  tugctl debug web --image=busybox -c probe -- sleep 3600
  tugctl attach web -c probe -it`,
		ValidArgsFunction: o.CompletePods,
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			if len(args) == 0 || dash == 0 {
				return fmt.Errorf("debug: name the pod: tugctl debug POD --image=IMAGE")
			}
			if dash > 1 || (dash < 0 && len(args) > 1) {
				return fmt.Errorf("debug: one POD, then the command after --, got %v", args)
			}
			if !cmd.Flags().Changed("attach") {
				f.attach = f.stdin
			}
			return runDebug(cmd.Context(), o, args[0], args[1:], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.image, "image", "", "the debugging container's image (required)")
	fl.StringVarP(&f.container, "container", "c", "", "the debugging container's name (default: debugger-XXXXX)")
	fl.StringVar(&f.target, "target", "", "the container whose process namespace the debugging container joins")
	fl.StringVar(&f.pullPolicy, "image-pull-policy", "", "Always, IfNotPresent or Never (default: by the image's tag)")
	fl.StringArrayVar(&f.env, "env", nil, "NAME=VALUE environment variables of the debugging container")
	fl.BoolVarP(&f.stdin, "stdin", "i", false, "keep the container's stdin open and attach to it")
	fl.BoolVarP(&f.tty, "tty", "t", false, "give the container a terminal (needs -i)")
	fl.BoolVar(&f.attach, "attach", false, "wait for the container to run and attach to it (default: with -i)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only what the container writes")
	fl.BoolVar(&f.argumentsOnly, "arguments-only", false, "what follows -- is the image's arguments, not a command")
	fl.DurationVar(&f.runningTimeout, "pod-running-timeout", time.Minute, "how long to wait for the container to run")
	return cmd
}

// debugContainer is the ephemeral container the flags describe, named
// name.
func debugContainer(name string, command []string, f *debugFlags) (*v1.EphemeralContainer, error) {
	switch {
	case f.image == "":
		return nil, fmt.Errorf("--image is required")
	case f.tty && !f.stdin:
		return nil, fmt.Errorf("-i/--stdin is required for containers with -t/--tty=true")
	case f.runningTimeout <= 0:
		return nil, fmt.Errorf("--pod-running-timeout %s: must be positive", f.runningTimeout)
	}
	ec := &v1.EphemeralContainer{Name: name, Image: f.image, ImagePullPolicy: f.pullPolicy, Stdin: f.stdin, Tty: f.tty,
		TerminationMessagePolicy: "File", TargetContainerName: f.target}
	if f.argumentsOnly {
		ec.Args = command
	} else {
		ec.Command = command
	}
	for _, e := range f.env {
		k, v, ok := strings.Cut(e, "=")
		if !ok || !validation.IsEnvVarName(k) {
			return nil, fmt.Errorf("--env %q: want NAME=VALUE with a valid variable name", e)
		}
		ec.Env = append(ec.Env, &v1.EnvVar{Name: k, Value: v})
	}
	return ec, nil
}

func runDebug(ctx context.Context, o *cli.Options, arg string, command []string, f *debugFlags) error {
	errOut := o.ErrOut
	if f.quiet {
		errOut = io.Discard
	}
	name := f.container
	if name == "" {
		name = "debugger-" + randomSuffix()
		fmt.Fprintf(errOut, "Defaulting debug container name to %s.\n", name)
	}
	ec, err := debugContainer(name, command, f)
	if err != nil {
		return err
	}
	ns, pod, err := podTarget(ctx, o, arg)
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	if f.target != "" {
		fmt.Fprintf(errOut, "Targeting container %q. If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n", f.target)
	}
	cur, err := client.For[*v1.Pod](c).Get(ctx, ns, pod)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pods %q not found", pod)
	}
	if err != nil {
		return err
	}
	// A merge by name would fold the new container into one of that
	// name: refused here, as nothing would be added.
	if _, err := remote.Container(cur, name, io.Discard); err == nil {
		return fmt.Errorf("pod %s already has a container named %q: name the debugging container with -c", pod, name)
	}
	patch, err := addEphemeralPatch(cur, ec)
	if err != nil {
		return err
	}
	if _, err := client.For[*v1.Pod](c).Patch(ctx, ns, pod, "strategic", patch, client.PatchOptions{Subresource: "ephemeralcontainers"}); err != nil {
		return err
	}
	if !f.attach {
		return nil
	}
	p, running, err := waitEphemeral(ctx, c, ns, pod, name, f.runningTimeout)
	if err != nil {
		return err
	}
	if running {
		a := remote.Attach{Container: name, Stdin: f.stdin, TTY: f.tty, Quiet: f.quiet}
		_, err = a.Run(ctx, c, p, remote.Session{In: o.In, Out: o.Out, ErrOut: o.ErrOut})
		switch {
		case errors.Is(err, context.Canceled):
			return cli.ExitCode(130) // ^C: tugctl goes, the container stays
		case err == nil || !strings.Contains(err.Error(), "is not running"):
			return err
		}
	}
	// It ended before tugctl could attach: its log is what it wrote.
	return remote.CopyLog(ctx, c, &v1.LogsRequest{Namespace: ns, Pod: pod, Container: name}, o.Out)
}

// addEphemeralPatch is the strategic merge patch that adds ec to pod, as
// kubectl debug's two-way patch has it: the new container, and the list's
// order with it last ($setElementOrder; without it a merge puts the
// patch's items first).
func addEphemeralPatch(pod *v1.Pod, ec *v1.EphemeralContainer) ([]byte, error) {
	body, err := protojson.Marshal(ec)
	if err != nil {
		return nil, err
	}
	var order []map[string]string
	for _, e := range pod.GetSpec().GetEphemeralContainers() {
		order = append(order, map[string]string{"name": e.Name})
	}
	order = append(order, map[string]string{"name": ec.Name})
	o, err := json.Marshal(order)
	if err != nil {
		return nil, err
	}
	return []byte(fmt.Sprintf(`{"spec":{"$setElementOrder/ephemeralContainers":%s,"ephemeralContainers":[%s]}}`, o, body)), nil
}

// waitEphemeral waits until ephemeral container name of pod ns/pod runs
// (true) or has ended (false), as kubectl debug waits before it attaches.
func waitEphemeral(ctx context.Context, c *client.Client, ns, pod, name string, timeout time.Duration) (*v1.Pod, bool, error) {
	var p *v1.Pod
	var running bool
	err := wait.Until(ctx, timeout, func(ctx context.Context) error {
		var err error
		if p, err = client.For[*v1.Pod](c).Get(ctx, ns, pod); err != nil {
			return err
		}
		if remote.Completed(p) {
			return wait.Stop(fmt.Errorf("pod %s has completed (%s): its ephemeral container will not run", pod, p.GetStatus().GetPhase()))
		}
		for _, cs := range p.GetStatus().GetEphemeralContainerStatuses() {
			if cs.Name != name {
				continue
			}
			switch st := cs.GetState(); {
			case st.GetRunning() != nil:
				running = true
				return nil
			case st.GetTerminated() != nil:
				return nil
			case st.GetWaiting() != nil:
				return fmt.Errorf("container %s is waiting: %s %s", name, st.Waiting.Reason, st.Waiting.Message)
			}
		}
		return fmt.Errorf("container %s has no status yet", name)
	})
	if err != nil && p != nil && ctx.Err() == nil {
		return p, false, fmt.Errorf("timed out waiting for the debugging container %s to run (--pod-running-timeout %s): %w", name, timeout, err)
	}
	return p, running, err
}

// randomSuffix is 5 characters as Kubernetes' name generator makes them.
func randomSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
