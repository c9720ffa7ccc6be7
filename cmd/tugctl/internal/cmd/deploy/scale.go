package deploy

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type scaleFlags struct {
	replicas        int32
	currentReplicas int32
}

func newScaleCommand(o *cli.Options) *cobra.Command {
	f := &scaleFlags{}
	cmd := &cobra.Command{
		Use:   "scale KIND/NAME... --replicas=N",
		Short: "Set the number of replicas of deployments, replica sets or stateful sets",
		Example: `  tugctl scale deploy/nginx --replicas=5
  tugctl scale statefulset web --replicas=1
  tugctl scale rs nginx-7c5ddbdf54 --replicas=0 --current-replicas=3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("replicas") {
				return fmt.Errorf("--replicas: required")
			}
			return runScale(cmd.Context(), o, args, f)
		},
	}
	cmd.Flags().Int32Var(&f.replicas, "replicas", 0, "the new number of replicas (required)")
	cmd.Flags().Int32Var(&f.currentReplicas, "current-replicas", -1, "precondition: scale only if the current number of replicas is this")
	return cmd
}

func runScale(ctx context.Context, o *cli.Options, args []string, f *scaleFlags) error {
	if f.replicas < 0 {
		return fmt.Errorf("--replicas %d: must be 0 or more", f.replicas)
	}
	refs, err := cli.SingleRefs(args, scalableKinds()...)
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
		sc := r.Kind.Scale
		obj, err := api.Mutate(ctx, ns, r.Name, false, func(obj v1.Object) error {
			if cur := sc.Replicas(obj); f.currentReplicas >= 0 && cur != f.currentReplicas {
				return fmt.Errorf("%s/%s: expected %d replicas (--current-replicas), found %d", printers.ResourceName(r.Kind), r.Name, f.currentReplicas, cur)
			}
			sc.SetReplicas(obj, f.replicas)
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s scaled\n", printers.ObjectName(r.Kind, obj))
	}
	return nil
}

// scalableKinds are the kinds with a scale (kinds.Kind.Scale).
func scalableKinds() []string {
	var out []string
	for _, k := range kinds.All() {
		if k.Scale != nil {
			out = append(out, k.Name)
		}
	}
	return out
}
