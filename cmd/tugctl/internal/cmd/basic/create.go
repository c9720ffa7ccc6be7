package basic

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

func newCreateCommand(o *cli.Options) *cobra.Command {
	f := &cli.FileFlags{}
	cmd := &cobra.Command{
		Use:   "create -f FILE|DIR|- | create deployment|service|configmap|secret|namespace NAME ...",
		Short: "Create objects from manifests; fails for objects that exist",
		Example: `  tugctl create -f pod.yaml
  tugctl create namespace web
  tugctl create deployment web --image=nginx:1.25 --replicas=3 --port=80
  tugctl create service nodeport web --tcp=80:8080
  tugctl create configmap app --from-literal=mode=prod --from-file=app.conf
  tugctl create secret generic db --from-literal=password=s3cret --dry-run=client -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCreate(cmd.Context(), o, f)
		},
	}
	f.Register(cmd, "to create")
	cmd.AddCommand(newCreateDeploymentCommand(o), newCreateServiceCommand(o), newCreateConfigMapCommand(o), newCreateSecretCommand(o))
	cmd.AddCommand(&cobra.Command{
		Use:     "namespace NAME",
		Aliases: []string{"ns"},
		Short:   "Create a namespace",
		Args:    cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, _ := kinds.Lookup("Namespace")
			api, err := o.API(k)
			if err != nil {
				return err
			}
			obj, err := api.Create(cmd.Context(), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: args[0]}})
			if err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "%s created\n", printers.ObjectName(k, obj))
			return nil
		},
	})
	return cmd
}

func runCreate(ctx context.Context, o *cli.Options, f *cli.FileFlags) error {
	objs, err := o.ReadManifests(f.Files, f.Recursive)
	if err != nil {
		return err
	}
	for _, mo := range objs {
		if err := o.PlaceObject(mo); err != nil {
			return err
		}
	}
	failed := false
	for _, mo := range objs {
		api, err := o.API(mo.Kind)
		if err != nil {
			return err
		}
		out, err := api.Create(ctx, mo.Object)
		if errors.Is(err, apierrors.ErrUnavailable) {
			return err
		}
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				fmt.Fprintf(o.ErrOut, "Error from server (AlreadyExists): %s: %s %q already exists\n", mo.Source, printers.QualifiedPlural(mo.Kind), mo.Object.GetMetadata().GetName())
			} else {
				fmt.Fprintf(o.ErrOut, "error: %s (%s %s): %v\n", mo.Source, mo.Kind.Name, mo.Object.GetMetadata().GetName(), err)
			}
			failed = true
			continue
		}
		fmt.Fprintf(o.Out, "%s created\n", printers.ObjectName(mo.Kind, out))
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}
