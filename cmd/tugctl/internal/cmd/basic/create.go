package basic

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type createFlags struct {
	files  cli.FileFlags
	dryRun cli.DryRun
	output string
}

func newCreateCommand(o *cli.Options) *cobra.Command {
	f := &createFlags{}
	cmd := &cobra.Command{
		Use:   "create -f FILE|DIR|- | create deployment|service|configmap|secret|namespace|serviceaccount|job|token NAME ...",
		Short: "Create objects from manifests; fails for objects that exist",
		Example: `  tugctl create -f pod.yaml
  tugctl create namespace web
  tugctl create serviceaccount builder -n ci
  tugctl create token builder -n ci --duration=1h
  tugctl create deployment web --image=nginx:1.25 --replicas=3 --port=80
  tugctl create service nodeport web --tcp=80:8080
  tugctl create configmap app --from-literal=mode=prod --from-file=app.conf
  tugctl create secret generic db --from-literal=password=s3cret --dry-run=client -o yaml
  tugctl create -k overlays/dev --dry-run=server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCreate(cmd.Context(), o, f)
		},
	}
	f.files.Register(cmd, "to create")
	f.files.RegisterKustomize(cmd, "to create")
	cli.RegisterDryRun(cmd, &f.dryRun)
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "print the created objects: yaml, json, name or a template")
	cmd.AddCommand(newCreateDeploymentCommand(o), newCreateServiceCommand(o), newCreateConfigMapCommand(o), newCreateSecretCommand(o),
		newCreateNamespaceCommand(o), newCreateServiceAccountCommand(o), newCreateJobCommand(o), newCreateTokenCommand(o))
	return cmd
}

func newCreateNamespaceCommand(o *cli.Options) *cobra.Command {
	g := &genFlags{}
	cmd := &cobra.Command{
		Use:     "namespace NAME",
		Aliases: []string{"ns"},
		Short:   "Create a namespace",
		Args:    cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.emit(cmd.Context(), o, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: args[0]}})
		},
	}
	g.register(cmd)
	return cmd
}

func runCreate(ctx context.Context, o *cli.Options, f *createFlags) error {
	out, err := cli.DocumentOutput(f.output)
	if err != nil {
		return err
	}
	// Each document that decodes is created; each refused one is
	// reported and makes the exit status 1, as kubectl create does.
	objs, derr := o.ReadInputEach(f.files)
	if len(objs) == 0 {
		return derr
	}
	failed := o.ReportEach(derr)
	var valid []manifest.Object
	for _, mo := range objs {
		if err := o.PlaceObject(mo); err != nil {
			fmt.Fprintf(o.ErrOut, "error: %v\n", err)
			failed = true
			continue
		}
		valid = append(valid, mo)
	}
	for _, mo := range valid {
		api, err := o.WriteAPI(mo.Kind, f.dryRun)
		if err != nil {
			return err
		}
		var created v1.Object
		if f.dryRun == cli.DryRunClient {
			created = mo.Object
			mo.Kind.Default(created)
			err = mo.Kind.Validate(created).Err(mo.Kind.Name, created.GetMetadata().GetName())
		} else {
			created, err = api.Create(ctx, mo.Object)
		}
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
		if err := o.Printed(out, mo.Kind, created, "created", f.dryRun); err != nil {
			return err
		}
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

func newCreateServiceAccountCommand(o *cli.Options) *cobra.Command {
	g := &genFlags{}
	cmd := &cobra.Command{
		Use:     "serviceaccount NAME",
		Aliases: []string{"sa"},
		Short:   "Create a service account",
		Args:    cli.ExactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return g.emit(cmd.Context(), o, &v1.ServiceAccount{Metadata: &v1.ObjectMeta{Name: args[0]}})
		},
	}
	g.register(cmd)
	return cmd
}
