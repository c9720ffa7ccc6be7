package basic

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// genFlags are what every command that builds an object from flags shares
// (create deployment|service|secret|configmap, expose, run): --dry-run and
// -o.
type genFlags struct {
	dryRun cli.DryRun
	output string
}

func (g *genFlags) register(cmd *cobra.Command) {
	cli.RegisterDryRun(cmd, &g.dryRun)
	cmd.Flags().StringVarP(&g.output, "output", "o", "", "print the object: yaml, json, name, jsonpath=..., go-template=..., custom-columns=...")
}

// emit checks the flags, then creates obj (unless --dry-run=client) and
// prints it with -o, or kubectl's "kind/name created" line.
func (g *genFlags) emit(ctx context.Context, o *cli.Options, obj v1.Object) error {
	out, err := cli.DocumentOutput(g.output)
	if err != nil {
		return err
	}
	k, err := kinds.ForMessage(obj)
	if err != nil {
		return err
	}
	m := v1.Meta(obj)
	if k.Namespaced && m.Namespace == "" {
		if m.Namespace, err = o.Namespace(); err != nil {
			return err
		}
	}
	if g.dryRun == cli.DryRunClient {
		// As the server would: defaults, then validation, so a mistake
		// shows now.
		k.Default(obj)
		if err := k.Validate(obj).Err(k.Name, m.Name); err != nil {
			return err
		}
		return o.Printed(out, k, obj, "created", g.dryRun)
	}
	api, err := o.WriteAPI(k, g.dryRun)
	if err != nil {
		return err
	}
	created, err := api.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s %q already exists", printers.QualifiedPlural(k), m.Name)
	}
	if err != nil {
		return err
	}
	return o.Printed(out, k, created, "created", g.dryRun)
}
