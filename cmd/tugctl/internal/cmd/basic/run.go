package basic

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type runFlags struct {
	genFlags
	image, restart, labels, pullPolicy string
	port                               int32
	env                                []string
	command                            bool
	stdin, tty, attach, rm, quiet      bool
	leaveStdinOpen                     bool
	runningTimeout                     time.Duration
}

func newRunCommand(o *cli.Options) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run NAME --image=IMAGE [--restart=Always|OnFailure|Never] [--port=N] [--env=K=V] [--labels=a=b] [--command] [-i] [-t] [--attach] [--rm] [-- ARGS...]",
		Short: "Run a pod of one container",
		Long: `Create a pod named NAME, labelled run=NAME, with one container NAME running
IMAGE. What follows -- is the container's args (the image's entrypoint
runs them), or with --command its command.

With --attach (implied by -i) tugctl waits for the pod to run and
attaches to its process, as tugctl attach does: -i makes the container
with stdin open (closed when tugctl's closes, unless --leave-stdin-open)
and passes standard input to it, -t gives it a terminal (this one, when
standard input is one). A process that ended before tugctl could attach
has its log printed instead. With --restart=Never or OnFailure tugctl
then waits for the pod to finish and exits with its container's exit
status; --rm deletes the pod at the end.`,
		Example: `  tugctl run web --image=nginx:1.25 --port=80
  tugctl run once --image=busybox --restart=Never -- echo hello
  tugctl run shell --image=busybox --command -- sh -c 'sleep 3600'
  tugctl run -it --rm debug --image=busybox --restart=Never -- sh
  echo hello | tugctl run -i --rm upper --image=busybox --restart=Never -- tr a-z A-Z`,
		RunE: func(cmd *cobra.Command, args []string) error {
			name, rest, err := nameAndCommand(cmd, args)
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("attach") && f.stdin {
				f.attach = true
			}
			if err := f.checkAttach(); err != nil {
				return err
			}
			pod, err := runPod(name, rest, f)
			if err != nil {
				return err
			}
			if f.attach {
				return runAttached(cmd.Context(), o, pod, f)
			}
			return f.emit(cmd.Context(), o, pod)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.image, "image", "", "the container's image (required)")
	fl.StringVar(&f.restart, "restart", "Always", "the pod's restart policy: Always, OnFailure or Never")
	fl.StringVar(&f.labels, "labels", "", "labels a=b,c=d (default run=NAME)")
	fl.StringVar(&f.pullPolicy, "image-pull-policy", "", "Always, IfNotPresent or Never (default: by the image's tag)")
	fl.Int32Var(&f.port, "port", 0, "the port the container exposes")
	fl.StringArrayVar(&f.env, "env", nil, "K=V environment variables; repeatable")
	fl.BoolVar(&f.command, "command", false, "what follows -- is the command, not the args")
	fl.BoolVarP(&f.stdin, "stdin", "i", false, "keep the container's stdin open and pass standard input to it (implies --attach)")
	fl.BoolVarP(&f.tty, "tty", "t", false, "give the container a terminal (needs -i)")
	fl.BoolVar(&f.attach, "attach", false, "wait for the pod to run and attach to its process (default: with -i)")
	fl.BoolVar(&f.rm, "rm", false, "delete the pod when the attached process ends")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only what the process writes")
	fl.BoolVar(&f.leaveStdinOpen, "leave-stdin-open", false, "with -i: keep the container's stdin open after this session ends (no stdinOnce)")
	fl.DurationVar(&f.runningTimeout, "pod-running-timeout", time.Minute, "with --attach: how long to wait for the pod to run, and then to finish")
	f.register(cmd)
	return cmd
}

func runPod(name string, rest []string, f *runFlags) (*v1.Pod, error) {
	if f.image == "" {
		return nil, fmt.Errorf("--image: required")
	}
	switch f.restart {
	case "Always", "OnFailure", "Never":
	default:
		return nil, fmt.Errorf("--restart %q: want Always, OnFailure or Never", f.restart)
	}
	if f.command && len(rest) == 0 {
		return nil, fmt.Errorf("--command: give the command after --")
	}
	labels := map[string]string{"run": name}
	if f.labels != "" {
		var err error
		if labels, err = labelMap(f.labels); err != nil {
			return nil, err
		}
	}
	c := &v1.Container{Name: name, Image: f.image, ImagePullPolicy: f.pullPolicy,
		Stdin: f.stdin, StdinOnce: f.stdin && !f.leaveStdinOpen, Tty: f.tty}
	if f.command {
		c.Command = rest
	} else {
		c.Args = rest
	}
	if f.port > 0 {
		c.Ports = []*v1.ContainerPort{{ContainerPort: f.port}}
	}
	for _, e := range f.env {
		k, v, ok := strings.Cut(e, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want KEY=VALUE", e)
		}
		c.Env = append(c.Env, &v1.EnvVar{Name: k, Value: v})
	}
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Labels: labels},
		Spec:     &v1.PodSpec{RestartPolicy: f.restart, Containers: []*v1.Container{c}},
	}, nil
}
