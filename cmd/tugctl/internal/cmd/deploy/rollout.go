package deploy

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/describe"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
)

func newRolloutCommand(o *cli.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND KIND/NAME",
		Short: "Manage the rollout of deployments, daemon sets and stateful sets: status, history, undo, restart, pause, resume",
		Example: `  tugctl rollout status deploy/nginx
  tugctl rollout history daemonset/agent
  tugctl rollout undo statefulset/web --to-revision=1
  tugctl rollout restart deploy/nginx`,
	}
	cmd.AddCommand(
		newRolloutStatusCommand(o),
		newRolloutHistoryCommand(o),
		newRolloutUndoCommand(o),
		newRolloutRestartCommand(o),
		newRolloutPauseCommand(o, true),
		newRolloutPauseCommand(o, false),
	)
	return cmd
}

// eachWorkload calls fn for each object a rollout command names (of the
// allowed kinds), in order, and stops at the first error.
func eachWorkload(o *cli.Options, args []string, allowed []string, fn func(api *client.Typed[v1.Object], k *kinds.Kind, ns, name string) error) error {
	refs, err := cli.SingleRefs(args, allowed...)
	if err != nil {
		return err
	}
	for _, r := range refs {
		api, err := o.API(r.Kind)
		if err != nil {
			return err
		}
		ns, err := o.ObjectNamespace(r.Kind)
		if err != nil {
			return err
		}
		if err := fn(api, r.Kind, ns, r.Name); err != nil {
			return err
		}
	}
	return nil
}

// changeWorkloads applies change to each object a rollout command names
// (read-modify-write, retried on conflict) and prints "KIND/NAME <done>".
func changeWorkloads(ctx context.Context, o *cli.Options, args []string, allowed []string, done string, change func(v1.Object) error) error {
	return eachWorkload(o, args, allowed, func(api *client.Typed[v1.Object], k *kinds.Kind, ns, name string) error {
		obj, err := api.Mutate(ctx, ns, name, false, change)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s %s\n", printers.ObjectName(k, obj), done)
		return nil
	})
}

// Annotations of the rollout commands, as kubectl's.
const (
	// ChangeCauseAnnotation is a revision's CHANGE-CAUSE in rollout history.
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	// RestartedAtAnnotation on the pod template makes rollout restart
	// roll out new pods.
	RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
)

// skippedOnRollback says which replica set annotations are not copied to
// the deployment on rollback (as in kubectl).
func skippedOnRollback(key string) bool {
	switch key {
	case v1.LastAppliedAnnotation, revision.Annotation,
		"deployment.kubernetes.io/revision-history",
		"deployment.kubernetes.io/desired-replicas",
		"deployment.kubernetes.io/max-replicas":
		return true
	}
	return false
}

func newRolloutHistoryCommand(o *cli.Options) *cobra.Command {
	var showRevision int64
	cmd := &cobra.Command{
		Use:   "history KIND/NAME",
		Short: "List a deployment's, daemon set's or stateful set's revisions, or show one with --revision",
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachWorkload(o, args, rolloutKinds, func(api *client.Typed[v1.Object], k *kinds.Kind, ns, name string) error {
				return history(cmd.Context(), o, api, k, ns, name, showRevision)
			})
		},
	}
	cmd.Flags().Int64Var(&showRevision, "revision", 0, "show the pod template of this revision")
	return cmd
}

func history(ctx context.Context, o *cli.Options, api *client.Typed[v1.Object], k *kinds.Kind, ns, name string, show int64) error {
	obj, err := api.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	c, _ := o.Client()
	revs, err := revisions(ctx, c, obj)
	if err != nil {
		return err
	}
	full := printers.ObjectName(k, obj)
	if show > 0 {
		for _, r := range revs {
			if r.number == show {
				fmt.Fprintf(o.Out, "%s with revision #%d\n", full, show)
				fmt.Fprintln(o.Out, "Pod Template:")
				return describe.PodTemplate(o.Out, r.shown)
			}
		}
		return fmt.Errorf("%s: unable to find revision %d in history", full, show)
	}
	fmt.Fprintln(o.Out, full)
	if len(revs) == 0 {
		fmt.Fprintln(o.Out, "No rollout history found.")
		return nil
	}
	cells := [][]string{{"REVISION", "CHANGE-CAUSE"}}
	for _, r := range revs {
		cells = append(cells, []string{strconv.FormatInt(r.number, 10), table.OrNone(r.annotations[ChangeCauseAnnotation])})
	}
	printers.WriteRows(o.Out, cells)
	fmt.Fprintln(o.Out)
	return nil
}

func newRolloutUndoCommand(o *cli.Options) *cobra.Command {
	var toRevision int64
	cmd := &cobra.Command{
		Use:   "undo KIND/NAME [--to-revision=N]",
		Short: "Roll a deployment, daemon set or stateful set back to its previous revision, or to --to-revision",
		Long: `Roll back as kubectl does: copy the pod template of a previous revision
(a deployment's replica set, without its pod-template-hash label, and its
annotations; a daemon set's or stateful set's ControllerRevision) back into
the object. Its controller then rolls out that template as a new revision.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachWorkload(o, args, rolloutKinds, func(api *client.Typed[v1.Object], k *kinds.Kind, ns, name string) error {
				return undo(cmd.Context(), o, api, k, ns, name, toRevision)
			})
		},
	}
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to; 0 is the previous one")
	return cmd
}

// pausedError refuses to roll back or restart a paused deployment.
func pausedError(obj v1.Object, full, what string) error {
	if d, ok := obj.(*v1.Deployment); ok && d.GetSpec().GetPaused() {
		return fmt.Errorf("you cannot %s a paused deployment; resume it first with 'tugctl rollout resume %s' and try again", what, full)
	}
	return nil
}

func undo(ctx context.Context, o *cli.Options, api *client.Typed[v1.Object], k *kinds.Kind, ns, name string, toRevision int64) error {
	if toRevision < 0 {
		return fmt.Errorf("--to-revision %d: must be 0 or more", toRevision)
	}
	obj, err := api.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	full := printers.ObjectName(k, obj)
	if err := pausedError(obj, full, "roll back"); err != nil {
		return err
	}
	c, _ := o.Client()
	revs, err := revisions(ctx, c, obj)
	if err != nil {
		return err
	}
	target, err := rollbackTarget(revs, toRevision)
	if err != nil {
		return fmt.Errorf("%s: %w", full, err)
	}
	skipped := false
	_, err = api.Mutate(ctx, ns, name, false, func(obj v1.Object) error {
		if err := pausedError(obj, full, "roll back"); err != nil {
			return err
		}
		if proto.Equal(podTemplate(obj), target.template) {
			skipped = true
			return nil
		}
		setPodTemplate(obj, target.template)
		if _, ok := obj.(*v1.Deployment); ok {
			m := v1.Meta(obj)
			for k, v := range target.annotations {
				if !skippedOnRollback(k) {
					setAnnotation(m, k, v)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if skipped {
		fmt.Fprintf(o.Out, "%s skipped rollback (current template already matches revision %d)\n", full, target.number)
		return nil
	}
	fmt.Fprintf(o.Out, "%s rolled back\n", full)
	return nil
}

// rollbackTarget picks revision to, or the revision before the newest
// when to is 0 (revs are in revision order).
func rollbackTarget(revs []podRevision, to int64) (podRevision, error) {
	if to > 0 {
		for _, r := range revs {
			if r.number == to {
				return r, nil
			}
		}
		return podRevision{}, fmt.Errorf("unable to find revision %d in history (see tugctl rollout history)", to)
	}
	if len(revs) < 2 {
		return podRevision{}, fmt.Errorf("no previous revision to roll back to (see tugctl rollout history)")
	}
	return revs[len(revs)-2], nil
}

func newRolloutRestartCommand(o *cli.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart KIND/NAME",
		Short: "Restart a deployment's, daemon set's or stateful set's pods with a rolling update",
		Long: `Restart sets the pod template annotation kubectl.kubernetes.io/restartedAt
to the current time, so the controller rolls out new pods.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeWorkloads(cmd.Context(), o, args, rolloutKinds, "restarted", func(obj v1.Object) error {
				if d, ok := obj.(*v1.Deployment); ok && d.GetSpec().GetPaused() {
					return fmt.Errorf("can't restart paused deployment %s (run tugctl rollout resume first)", d.GetMetadata().GetName())
				}
				t := podTemplate(obj)
				if t == nil {
					t = &v1.PodTemplateSpec{}
				} else {
					t = proto.Clone(t).(*v1.PodTemplateSpec)
				}
				setAnnotation(v1.Meta(t), RestartedAtAnnotation, time.Now().Format(time.RFC3339))
				setPodTemplate(obj, t)
				return nil
			})
		},
	}
}

// newRolloutPauseCommand is `rollout pause` (pause true) or `rollout
// resume`: they set spec.paused of deployments (the only kind that has it).
func newRolloutPauseCommand(o *cli.Options, pause bool) *cobra.Command {
	use, short, done, already := "resume", "Resume a paused deployment", "resumed", "is not paused"
	if pause {
		use, short, done, already = "pause", "Pause a deployment: template changes are not rolled out until resume", "paused", "is already paused"
	}
	return &cobra.Command{
		Use:   use + " deploy/NAME",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachWorkload(o, args, rolloutKinds, func(api *client.Typed[v1.Object], k *kinds.Kind, ns, name string) error {
				if k.Name != "Deployment" {
					return fmt.Errorf("%s/%s: %s is not supported (only deployments can be paused)", printers.ResourceName(k), name, map[bool]string{true: "pausing", false: "resuming"}[pause])
				}
				obj, err := api.Mutate(cmd.Context(), ns, name, false, func(obj v1.Object) error {
					d := obj.(*v1.Deployment)
					if d.GetSpec().GetPaused() == pause {
						return fmt.Errorf("%s %s", printers.ObjectName(k, d), already)
					}
					d.Spec.Paused = pause
					return nil
				})
				if err != nil {
					return err
				}
				fmt.Fprintf(o.Out, "%s %s\n", printers.ObjectName(k, obj), done)
				return nil
			})
		},
	}
}
