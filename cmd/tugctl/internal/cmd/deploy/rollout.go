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
		Use:   "rollout SUBCOMMAND deploy/NAME",
		Short: "Manage the rollout of deployments: status, history, undo, restart, pause, resume",
		Example: `  tugctl rollout status deploy/nginx
  tugctl rollout history deploy/nginx
  tugctl rollout undo deploy/nginx --to-revision=1
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

// eachDeployment calls fn for each deployment a rollout command names, in
// order, and stops at the first error.
func eachDeployment(o *cli.Options, args []string, fn func(api *client.Typed[*v1.Deployment], ns, name string) error) error {
	refs, err := cli.SingleRefs(args, "Deployment")
	if err != nil {
		return err
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	api := client.For[*v1.Deployment](c)
	for _, r := range refs {
		if err := fn(api, ns, r.Name); err != nil {
			return err
		}
	}
	return nil
}

// changeDeployments applies change to each deployment a rollout command
// names (read-modify-write, retried on conflict) and prints
// "deployment.apps/NAME <done>".
func changeDeployments(ctx context.Context, o *cli.Options, args []string, done string, change func(*v1.Deployment) error) error {
	return eachDeployment(o, args, func(api *client.Typed[*v1.Deployment], ns, name string) error {
		d, err := api.Mutate(ctx, ns, name, false, change)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s %s\n", printers.ObjectName(deploymentKind(), d), done)
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

func deploymentKind() *kinds.Kind {
	k, _ := kinds.Lookup("Deployment")
	return k
}

func newRolloutHistoryCommand(o *cli.Options) *cobra.Command {
	var showRevision int64
	cmd := &cobra.Command{
		Use:   "history deploy/NAME",
		Short: "List a deployment's revisions, or show one with --revision",
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachDeployment(o, args, func(api *client.Typed[*v1.Deployment], ns, name string) error {
				return history(cmd.Context(), o, api, ns, name, showRevision)
			})
		},
	}
	cmd.Flags().Int64Var(&showRevision, "revision", 0, "show the pod template of this revision")
	return cmd
}

func history(ctx context.Context, o *cli.Options, api *client.Typed[*v1.Deployment], ns, name string, show int64) error {
	d, err := api.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	c, _ := o.Client()
	rss, err := revision.ReplicaSets(ctx, c, d)
	if err != nil {
		return err
	}
	full := printers.ObjectName(deploymentKind(), d)
	if show > 0 {
		for _, rs := range rss {
			if revision.Of(rs) == show {
				fmt.Fprintf(o.Out, "%s with revision #%d\n", full, show)
				fmt.Fprintln(o.Out, "Pod Template:")
				return describe.PodTemplate(o.Out, rs.GetSpec().GetTemplate())
			}
		}
		return fmt.Errorf("%s: unable to find revision %d in history", full, show)
	}
	fmt.Fprintln(o.Out, full)
	var rows []*v1.ReplicaSet
	for _, rs := range rss {
		if revision.Of(rs) > 0 {
			rows = append(rows, rs)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(o.Out, "No rollout history found.")
		return nil
	}
	cells := [][]string{{"REVISION", "CHANGE-CAUSE"}}
	for _, rs := range rows {
		cells = append(cells, []string{strconv.FormatInt(revision.Of(rs), 10), table.OrNone(rs.GetMetadata().GetAnnotations()[ChangeCauseAnnotation])})
	}
	printers.WriteRows(o.Out, cells)
	fmt.Fprintln(o.Out)
	return nil
}

func newRolloutUndoCommand(o *cli.Options) *cobra.Command {
	var toRevision int64
	cmd := &cobra.Command{
		Use:   "undo deploy/NAME [--to-revision=N]",
		Short: "Roll a deployment back to its previous revision, or to --to-revision",
		Long: `Roll a deployment back: copy the pod template of a previous revision's
replica set (without its pod-template-hash label) and its annotations back
into the deployment, as kubectl does. The deployment controller then rolls
out that template as a new revision.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return eachDeployment(o, args, func(api *client.Typed[*v1.Deployment], ns, name string) error {
				return undo(cmd.Context(), o, api, ns, name, toRevision)
			})
		},
	}
	cmd.Flags().Int64Var(&toRevision, "to-revision", 0, "the revision to roll back to; 0 is the previous one")
	return cmd
}

func undo(ctx context.Context, o *cli.Options, api *client.Typed[*v1.Deployment], ns, name string, toRevision int64) error {
	if toRevision < 0 {
		return fmt.Errorf("--to-revision %d: must be 0 or more", toRevision)
	}
	d, err := api.Get(ctx, ns, name)
	if err != nil {
		return err
	}
	full := printers.ObjectName(deploymentKind(), d)
	if d.GetSpec().GetPaused() {
		return fmt.Errorf("you cannot roll back a paused deployment; resume it first with 'tugctl rollout resume %s' and try again", full)
	}
	c, _ := o.Client()
	rss, err := revision.ReplicaSets(ctx, c, d)
	if err != nil {
		return err
	}
	target, err := rollbackTarget(rss, toRevision)
	if err != nil {
		return fmt.Errorf("%s: %w", full, err)
	}
	tmpl := revision.TemplateWithoutHash(target.GetSpec().GetTemplate())
	rev := revision.Of(target)
	skipped := false
	_, err = api.Mutate(ctx, ns, name, false, func(d *v1.Deployment) error {
		if d.GetSpec().GetPaused() {
			return fmt.Errorf("you cannot roll back a paused deployment; resume it first with 'tugctl rollout resume %s' and try again", full)
		}
		if proto.Equal(d.Spec.Template, tmpl) {
			skipped = true
			return nil
		}
		d.Spec.Template = proto.Clone(tmpl).(*v1.PodTemplateSpec)
		m := v1.Meta(d)
		for k, v := range target.GetMetadata().GetAnnotations() {
			if !skippedOnRollback(k) {
				setAnnotation(m, k, v)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if skipped {
		fmt.Fprintf(o.Out, "%s skipped rollback (current template already matches revision %d)\n", full, rev)
		return nil
	}
	fmt.Fprintf(o.Out, "%s rolled back\n", full)
	return nil
}

// rollbackTarget picks the replica set of revision to, or of the revision
// before the newest when to is 0.
func rollbackTarget(rss []*v1.ReplicaSet, to int64) (*v1.ReplicaSet, error) {
	var revs []*v1.ReplicaSet
	for _, rs := range rss {
		if revision.Of(rs) > 0 {
			revs = append(revs, rs) // in revision order
		}
	}
	if to > 0 {
		for _, rs := range revs {
			if revision.Of(rs) == to {
				return rs, nil
			}
		}
		return nil, fmt.Errorf("unable to find revision %d in history (see tugctl rollout history)", to)
	}
	if len(revs) < 2 {
		return nil, fmt.Errorf("no previous revision to roll back to (see tugctl rollout history)")
	}
	return revs[len(revs)-2], nil
}

func newRolloutRestartCommand(o *cli.Options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart deploy/NAME",
		Short: "Restart a deployment's pods with a rolling update",
		Long: `Restart sets the pod template annotation kubectl.kubernetes.io/restartedAt
to the current time, so the deployment controller rolls out new pods.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeDeployments(cmd.Context(), o, args, "restarted", func(d *v1.Deployment) error {
				if d.GetSpec().GetPaused() {
					return fmt.Errorf("can't restart paused deployment %s (run tugctl rollout resume first)", d.GetMetadata().GetName())
				}
				if d.Spec.Template == nil {
					d.Spec.Template = &v1.PodTemplateSpec{}
				}
				setAnnotation(v1.Meta(d.Spec.Template), RestartedAtAnnotation, time.Now().Format(time.RFC3339))
				return nil
			})
		},
	}
}

// newRolloutPauseCommand is `rollout pause` (pause true) or `rollout
// resume`: they set spec.paused.
func newRolloutPauseCommand(o *cli.Options, pause bool) *cobra.Command {
	use, short, done, already := "resume", "Resume a paused deployment", "resumed", "is not paused"
	if pause {
		use, short, done, already = "pause", "Pause a deployment: template changes are not rolled out until resume", "paused", "is already paused"
	}
	return &cobra.Command{
		Use:   use + " deploy/NAME",
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			return changeDeployments(cmd.Context(), o, args, done, func(d *v1.Deployment) error {
				if d.GetSpec().GetPaused() == pause {
					return fmt.Errorf("%s %s", printers.ObjectName(deploymentKind(), d), already)
				}
				d.Spec.Paused = pause
				return nil
			})
		},
	}
}
