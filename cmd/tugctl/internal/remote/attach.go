package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// ErrPodCompleted is returned with the pod by WaitRunning when the pod
// has already finished (Succeeded or Failed): there is nothing to attach
// to, its log is what is left.
var ErrPodCompleted = errors.New("pod completed")

// DefaultContainerAnnotation names the container kubectl's logs, exec and
// attach pick when none is given.
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// Completed reports whether the pod has finished.
func Completed(p *v1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

// WaitRunning waits up to timeout until pod ns/name is running and ready
// (or running and without a Ready condition yet reported as false), as
// kubectl waits before it attaches. A pod that has completed returns with
// ErrPodCompleted; one that does not exist is an error at once.
func WaitRunning(ctx context.Context, c *client.Client, ns, name string, timeout time.Duration) (*v1.Pod, error) {
	var pod *v1.Pod
	err := wait.Until(ctx, timeout, func(ctx context.Context) error {
		p, err := client.For[*v1.Pod](c).Get(ctx, ns, name)
		if apierrors.IsNotFound(err) {
			return wait.Stop(fmt.Errorf("pods %q not found", name))
		}
		if err != nil {
			return err
		}
		pod = p
		switch {
		case Completed(p):
			return wait.Stop(ErrPodCompleted)
		case p.GetStatus().GetPhase() != "Running":
			return fmt.Errorf("pod %s is %s", name, phaseOf(p))
		case table.ConditionStatus(p.GetStatus().GetConditions(), "Ready") != "True":
			return fmt.Errorf("pod %s is running but not ready", name)
		}
		return nil
	})
	if errors.Is(err, ErrPodCompleted) {
		return pod, ErrPodCompleted
	}
	if err != nil && pod != nil && ctx.Err() == nil {
		return pod, fmt.Errorf("timed out waiting for pod %s to be running (%s, --pod-running-timeout %s)", name, phaseOf(pod), timeout)
	}
	return pod, err
}

// phaseOf is the pod's phase, and the reason its first waiting container
// gives.
func phaseOf(p *v1.Pod) string {
	ph := p.GetStatus().GetPhase()
	if ph == "" {
		ph = "Pending"
	}
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if w := cs.GetState().GetWaiting(); w != nil && w.Reason != "" {
			return ph + ", " + cs.Name + ": " + w.Reason
		}
	}
	return ph
}

// Container is the pod's container named name; with no name, the one
// the default-container annotation names, else the first, saying on
// errOut which it picked when the pod has several (as kubectl does).
func Container(p *v1.Pod, name string, errOut io.Writer) (*v1.Container, error) {
	cs := p.GetSpec().GetContainers()
	pick := name
	if pick == "" {
		pick = p.GetMetadata().GetAnnotations()[DefaultContainerAnnotation]
	}
	if pick == "" && len(cs) > 0 {
		pick = cs[0].Name
		if len(cs) > 1 {
			names := make([]string, len(cs))
			for i, c := range cs {
				names[i] = c.Name
			}
			fmt.Fprintf(errOut, "Defaulted container %q out of: %s\n", pick, strings.Join(names, ", "))
		}
	}
	for _, c := range append(slices.Clone(cs), p.GetSpec().GetInitContainers()...) {
		if c.Name == pick {
			return c, nil
		}
	}
	for _, e := range p.GetSpec().GetEphemeralContainers() {
		if e.Name == pick {
			return e.AsContainer(), nil
		}
	}
	return nil, fmt.Errorf("container %s not found in pod %s", pick, p.GetMetadata().GetName())
}

// Attach says how to attach to a container's process.
type Attach struct {
	// Container: empty picks as Container does.
	Container string
	// Stdin passes the session's In; TTY asks for a terminal (the
	// container's own decides); Quiet prints no notes.
	Stdin, TTY, Quiet bool
}

// Run attaches se's streams to the container of running pod p (kubectl
// attach): the output of its process from now on, and In as its input
// with Stdin. A terminal is used when the container has one and, with
// Stdin, In is a terminal. It returns when the process exits or the
// stream ends (In closed on a container whose stdin closes once); as
// with kubectl against Kubernetes, whose attach stream always ends in
// Success, the process's exit code is not an error (it is in the
// container's status), so tugctl attach and debug exit 0 after a session.
// An interactive terminal session ends with kubectl's "Session ended"
// note on how to attach again.
func (a Attach) Run(ctx context.Context, c *client.Client, p *v1.Pod, se Session) (Result, error) {
	errOut := se.ErrOut
	if a.Quiet {
		errOut = io.Discard
	}
	ctr, err := Container(p, a.Container, errOut)
	if err != nil {
		return Result{}, err
	}
	if Completed(p) {
		return Result{}, fmt.Errorf("cannot attach a container in a completed pod; current phase is %s", p.GetStatus().GetPhase())
	}
	tty := a.TTY
	switch {
	case tty && !ctr.Tty:
		fmt.Fprintf(errOut, "error: Unable to use a TTY - container %s did not allocate one\n", ctr.Name)
		tty = false
	case !tty && ctr.Tty:
		tty = true // the process writes to its terminal: so must the session
	}
	se.TerminalFd = Terminal(se.In, errOut, tty, a.Stdin)
	if se.TerminalFd >= 0 {
		fmt.Fprintln(errOut, "If you don't see a command prompt, try pressing enter.")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := v1.NewNodeAPIClient(c.Conn()).Attach(ctx)
	if err != nil {
		return Result{}, apierrors.FromGRPC(err)
	}
	m := p.GetMetadata()
	res, err := se.Run(ctx, s, &v1.ExecStart{Namespace: m.GetNamespace(), Pod: m.GetName(), Container: ctr.Name, Stdin: a.Stdin, Tty: tty})
	if err == nil && !a.Quiet && a.Stdin && se.TerminalFd >= 0 {
		fmt.Fprintln(se.Out, reattachMessage(p, ctr.Name))
	}
	return res, err
}

// reattachMessage is what kubectl attach prints after an interactive
// terminal session: how to attach again (an ephemeral container is never
// restarted, but may still run).
func reattachMessage(p *v1.Pod, container string) string {
	m := p.GetMetadata()
	for _, e := range p.GetSpec().GetEphemeralContainers() {
		if e.Name == container {
			return fmt.Sprintf("Session ended, the ephemeral container will not be restarted but may be reattached using 'tugctl attach %s -c %s -n %s -i -t' if it is still running", m.GetName(), container, m.GetNamespace())
		}
	}
	return fmt.Sprintf("Session ended, resume using 'tugctl attach %s -c %s -n %s -i -t' command", m.GetName(), container, m.GetNamespace())
}
