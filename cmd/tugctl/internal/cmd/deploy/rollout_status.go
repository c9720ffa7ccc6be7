package deploy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
)

// TimedOutReason is the Progressing condition reason of a rollout that
// missed its progress deadline.
const TimedOutReason = "ProgressDeadlineExceeded"

type rolloutStatusFlags struct {
	watch    bool
	timeout  time.Duration
	revision int64
}

func newRolloutStatusCommand(o *cli.Options) *cobra.Command {
	f := &rolloutStatusFlags{}
	cmd := &cobra.Command{
		Use:   "status KIND/NAME",
		Short: "Watch a deployment's, daemon set's or stateful set's rollout until it finishes",
		Long: `Watch a rollout, printing its progress, until it finishes.

Exits 0 once the object is successfully rolled out, and non-zero if a
deployment's rollout exceeds its progress deadline
(ProgressDeadlineExceeded) or --timeout passes. Daemon sets and stateful
sets report only for the RollingUpdate strategy, as in kubectl.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachWorkload(o, args, rolloutKinds, func(api *client.Typed[v1.Object], k *kinds.Kind, ns, name string) error {
				return rolloutStatus(cmd.Context(), o, api, k, ns, name, f)
			})
		},
	}
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", true, "watch until the rollout finishes; false prints the status once")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "give up after this long (0: never)")
	cmd.Flags().Int64Var(&f.revision, "revision", 0, "fail unless the deployment is at this revision (deployments only)")
	return cmd
}

// deploymentStatus is kubectl's rollout status logic: a progress message,
// whether the rollout is done, or an error once it has failed; wantRevision
// > 0 requires that revision.
func deploymentStatus(d *v1.Deployment, wantRevision int64) (string, bool, error) {
	name := d.GetMetadata().GetName()
	if wantRevision > 0 {
		if cur := revision.Of(d); cur != wantRevision {
			return "", false, fmt.Errorf("desired revision (%d) is different from the running revision (%d)", wantRevision, cur)
		}
	}
	st := d.GetStatus()
	if d.GetMetadata().GetGeneration() > st.GetObservedGeneration() {
		return "Waiting for deployment spec update to be observed...\n", false, nil
	}
	if c := table.Condition(st.GetConditions(), "Progressing"); c != nil && c.Reason == TimedOutReason {
		return "", false, fmt.Errorf("deployment %q exceeded its progress deadline", name)
	}
	want := d.GetSpec().GetReplicas()
	switch {
	case st.GetUpdatedReplicas() < want:
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d out of %d new replicas have been updated...\n", name, st.GetUpdatedReplicas(), want), false, nil
	case st.GetReplicas() > st.GetUpdatedReplicas():
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d old replicas are pending termination...\n", name, st.GetReplicas()-st.GetUpdatedReplicas()), false, nil
	case st.GetAvailableReplicas() < st.GetUpdatedReplicas():
		return fmt.Sprintf("Waiting for deployment %q rollout to finish: %d of %d updated replicas are available...\n", name, st.GetAvailableReplicas(), st.GetUpdatedReplicas()), false, nil
	}
	return fmt.Sprintf("deployment %q successfully rolled out\n", name), true, nil
}

// rolloutStatus prints the status, then each change of it from a watch,
// until the rollout is done, fails, or the timeout passes.
func rolloutStatus(ctx context.Context, o *cli.Options, api *client.Typed[v1.Object], k *kinds.Kind, ns, name string, f *rolloutStatusFlags) error {
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	last := ""
	report := func(obj v1.Object) (bool, error) {
		msg, done, err := workloadStatus(obj, f.revision)
		if err != nil {
			return false, err
		}
		if d, ok := obj.(*v1.Deployment); ok && d.GetSpec().GetPaused() && !done {
			msg = fmt.Sprintf("Waiting for deployment %q rollout to finish: the deployment is paused (tugctl rollout resume deploy/%s)\n", name, name)
		}
		if msg != last {
			fmt.Fprint(o.Out, msg)
			last = msg
		}
		return done, nil
	}
	for {
		d, err := api.Get(ctx, ns, name)
		if err != nil {
			return timeoutError(ctx, err, f.timeout)
		}
		done, err := report(d)
		if err != nil || done || !f.watch {
			return err
		}
		w, err := api.Watch(ctx, client.WatchOptions{Namespace: ns, FieldSelector: "metadata.name=" + name, ResourceVersion: d.GetMetadata().GetResourceVersion()})
		if err != nil {
			if ctxOver(ctx) {
				return timeoutError(ctx, err, f.timeout)
			}
			cli.SleepCtx(ctx, time.Second)
			continue
		}
		for {
			ev, err := w.Next()
			if err != nil {
				w.Stop()
				if ctxOver(ctx) {
					return timeoutError(ctx, err, f.timeout)
				}
				break // re-read and re-watch
			}
			switch ev.Type {
			case "DELETED":
				w.Stop()
				return fmt.Errorf("%s %q was deleted", strings.ToLower(k.Name), name)
			case "ADDED", "MODIFIED":
				done, err := report(ev.Object)
				if err != nil || done {
					w.Stop()
					return err
				}
			}
		}
	}
}

// timeoutError turns the error of a call cut short by --timeout into a
// message that says so.
func timeoutError(ctx context.Context, err error, timeout time.Duration) error {
	if timeout > 0 && ctxOver(ctx) && ctx.Err() != context.Canceled {
		return fmt.Errorf("timed out after %v waiting for the rollout to finish", timeout)
	}
	return err
}

// ctxOver reports whether ctx is done or its deadline has passed: the
// server may report the deadline before the local context fires.
func ctxOver(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}
