package deploy

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/reflect/protoreflect"

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
		Short: "Set the number of replicas of deployments or replica sets",
		Example: `  tugctl scale deploy/nginx --replicas=5
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
	refs, err := cli.SingleRefs(args, "Deployment", "ReplicaSet")
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
		obj, err := api.Mutate(ctx, ns, r.Name, false, func(obj v1.Object) error {
			spec, fd, err := replicasField(obj)
			if err != nil {
				return err
			}
			if cur := int32(spec.Get(fd).Int()); f.currentReplicas >= 0 && cur != f.currentReplicas {
				return fmt.Errorf("%s/%s: expected %d replicas (--current-replicas), found %d", printers.ResourceName(r.Kind), r.Name, f.currentReplicas, cur)
			}
			spec.Set(fd, protoreflect.ValueOfInt32(f.replicas))
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "%s scaled\n", printers.ObjectName(r.Kind, obj))
	}
	return nil
}

// replicasField finds spec.replicas of any kind that has one.
func replicasField(obj v1.Object) (protoreflect.Message, protoreflect.FieldDescriptor, error) {
	sfd := v1.Field(obj, "spec")
	if sfd == nil || sfd.Message() == nil {
		return nil, nil, fmt.Errorf("%s has no spec", obj.ProtoReflect().Descriptor().Name())
	}
	spec := obj.ProtoReflect().Mutable(sfd).Message()
	fd := spec.Descriptor().Fields().ByName("replicas")
	if fd == nil || fd.Kind() != protoreflect.Int32Kind {
		return nil, nil, fmt.Errorf("%s has no spec.replicas", obj.ProtoReflect().Descriptor().Name())
	}
	return spec, fd, nil
}
