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
	dryRun string
	output string
}

func (g *genFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&g.dryRun, "dry-run", "none", `"none" creates the object; "client" only prints it (with -o yaml: the manifest to apply)`)
	cmd.Flags().StringVarP(&g.output, "output", "o", "", "print the object: yaml, json, name, jsonpath=..., go-template=..., custom-columns=...")
}

// emit checks the flags, then creates obj (unless --dry-run=client) and
// prints it with -o, or kubectl's "kind/name created" line.
func (g *genFlags) emit(ctx context.Context, o *cli.Options, obj v1.Object) error {
	var out *printers.Output
	if g.output != "" {
		var err error
		if out, err = printers.ParseOutput(g.output); err != nil {
			return err
		}
		if out.IsTable() {
			return fmt.Errorf("--output %q: want yaml, json, name or a template here", g.output)
		}
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
	switch g.dryRun {
	case "none", "":
	case "client":
		// As the server would: defaults, then validation, so a mistake
		// shows now.
		k.Default(obj)
		if err := k.Validate(obj).Err(k.Name, m.Name); err != nil {
			return err
		}
		if out != nil {
			return out.Print(o.Out, []v1.Object{obj}, true)
		}
		fmt.Fprintf(o.Out, "%s created (dry run)\n", printers.ObjectName(k, obj))
		return nil
	case "server":
		return fmt.Errorf("--dry-run=server: this apiserver has no server-side dry run yet; use --dry-run=client")
	default:
		return fmt.Errorf(`--dry-run %q: want "none", "client" or "server"`, g.dryRun)
	}
	api, err := o.API(k)
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
	if out != nil {
		return out.Print(o.Out, []v1.Object{created}, true)
	}
	fmt.Fprintf(o.Out, "%s created\n", printers.ObjectName(k, created))
	return nil
}
