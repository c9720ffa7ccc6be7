package tugctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func newCreateCommand(o *Options) *cobra.Command {
	f := &fileFlags{}
	cmd := &cobra.Command{
		Use:   "create -f FILE|DIR|- | create namespace NAME",
		Short: "Create objects from manifests; fails for objects that exist",
		Example: `  tugctl create -f pod.yaml
  tugctl create namespace web`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.runCreate(cmd.Context(), f)
		},
	}
	f.register(cmd, "to create")
	cmd.AddCommand(&cobra.Command{
		Use:     "namespace NAME",
		Aliases: []string{"ns"},
		Short:   "Create a namespace",
		Args:    exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, _ := kinds.Lookup("Namespace")
			api, err := o.api(k)
			if err != nil {
				return err
			}
			obj, err := api.Create(cmd.Context(), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: args[0]}})
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s created\n", objectName(k, obj))
			return nil
		},
	})
	return cmd
}

func (o *Options) runCreate(ctx context.Context, f *fileFlags) error {
	objs, err := o.readManifests(f.files, f.recursive)
	if err != nil {
		return err
	}
	for _, mo := range objs {
		if err := o.placeObject(mo); err != nil {
			return err
		}
	}
	failed := false
	for _, mo := range objs {
		api, err := o.api(mo.Kind)
		if err != nil {
			return err
		}
		out, err := api.Create(ctx, mo.Object)
		if errors.Is(err, apierrors.ErrUnavailable) {
			return err
		}
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				fmt.Fprintf(o.ErrOut, "Error from server (AlreadyExists): %s: %s %q already exists\n", mo.Source, qualifiedPlural(mo.Kind), mo.Object.GetMetadata().GetName())
			} else {
				fmt.Fprintf(o.ErrOut, "error: %s (%s %s): %v\n", mo.Source, mo.Kind.Name, mo.Object.GetMetadata().GetName(), err)
			}
			failed = true
			continue
		}
		fmt.Fprintf(o.Out, "%s created\n", objectName(mo.Kind, out))
	}
	if failed {
		return errReported
	}
	return nil
}

// exactArgs is cobra.ExactArgs with a message naming what is missing.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("%s: want %s, got %d arguments (see %s --help)", cmd.CommandPath(), what, len(args), cmd.CommandPath())
		}
		return nil
	}
}
