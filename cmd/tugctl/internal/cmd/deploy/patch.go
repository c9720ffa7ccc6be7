package deploy

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type patchFlags struct {
	patch, patchFile string
	typ              string
	subresource      string
	dryRun           cli.DryRun
	output           string
	sel              cli.SelectFlags
}

func newPatchCommand(o *cli.Options) *cobra.Command {
	f := &patchFlags{}
	cmd := &cobra.Command{
		Use:   "patch KIND NAME|KIND/NAME|-f FILE (-p PATCH | --patch-file FILE) [--type strategic|merge|json]",
		Short: "Change fields of an object with a patch",
		Long: `Change an object with a patch applied by the apiserver to the object as
stored: a strategic merge patch (the default: lists of containers, ports,
volumes ... merge element by element, by name or port), a JSON merge patch
(RFC 7386: lists are replaced whole, null removes a field) or a JSON patch
(RFC 6902: a list of operations). The patch is JSON or YAML, against the
object's Kubernetes-shaped JSON, as "tugctl get -o json" prints it. The
result is validated as an update would be; a patch that does not apply or
gives an invalid object changes nothing.`,
		Example: `  tugctl patch deploy web -p '{"spec":{"replicas":3}}'
  tugctl patch deploy/web -p 'spec: {template: {spec: {containers: [{name: app, image: app:v2}]}}}'
  tugctl patch svc web --type merge -p '{"metadata":{"labels":{"tier":null}}}'
  tugctl patch pod web-1 --type json -p '[{"op":"replace","path":"/spec/activeDeadlineSeconds","value":60}]'
  tugctl patch node n1 --patch-file unschedulable.yaml --dry-run=server -o yaml
  tugctl patch pod web-1 --subresource resize -p '{"spec":{"containers":[{"name":"web","resources":{"limits":{"cpu":"1"}}}]}}'`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPatch(cmd.Context(), o, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.patch, "patch", "p", "", "the patch, JSON or YAML")
	fl.StringVar(&f.patchFile, "patch-file", "", "a file holding the patch")
	fl.StringVar(&f.typ, "type", "strategic", "the patch type: strategic, merge or json")
	fl.StringVar(&f.subresource, "subresource", "", `"status" patches the status alone; "resize" a pod's containers' cpu and memory in place`)
	fl.StringVarP(&f.output, "output", "o", "", "print the patched objects: yaml, json, name or a template")
	cli.RegisterDryRun(cmd, &f.dryRun)
	f.sel.Files.Register(cmd, "naming the objects to patch")
	return cmd
}

// readPatch reads -p or --patch-file as JSON (YAML is turned into JSON).
func readPatch(f *patchFlags) ([]byte, error) {
	var data []byte
	switch {
	case f.patch != "" && f.patchFile != "":
		return nil, fmt.Errorf("--patch and --patch-file do not go together")
	case f.patch != "":
		data = []byte(f.patch)
	case f.patchFile != "":
		b, err := os.ReadFile(f.patchFile)
		if err != nil {
			return nil, fmt.Errorf("--patch-file: %w", err)
		}
		data = b
	default:
		return nil, fmt.Errorf("must specify --patch or --patch-file containing the contents of the patch")
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("unable to parse %q: %v", data, err)
	}
	return j, nil
}

func runPatch(ctx context.Context, o *cli.Options, args []string, f *patchFlags) error {
	t, err := patch.Parse(f.typ)
	if err != nil {
		return fmt.Errorf("--type %q: want strategic, merge or json", f.typ)
	}
	switch f.subresource {
	case "", "status":
	case "resize":
		if f.dryRun == cli.DryRunClient {
			return fmt.Errorf("--subresource resize: the server decides what a resize may change; use --dry-run=server")
		}
	default:
		return fmt.Errorf("--subresource %q: only \"status\" and, for pods, \"resize\" can be patched", f.subresource)
	}
	p, err := readPatch(f)
	if err != nil {
		return err
	}
	out, err := cli.DocumentOutput(f.output)
	if err != nil {
		return err
	}
	if len(args) == 0 && len(f.sel.Files.Files) == 0 {
		return fmt.Errorf("name the object to patch: KIND NAME, KIND/NAME or -f FILE")
	}
	targets, missing, err := o.Select(ctx, args, f.sel)
	if err != nil {
		return err
	}
	for _, tg := range targets {
		var after v1.Object
		var changed bool
		if f.dryRun == cli.DryRunClient {
			// The patch is applied here, as the server would apply it.
			after, changed, err = o.PatchLocally(tg, t, p)
		} else {
			after, changed, err = o.SendPatch(ctx, tg, string(t), p, cli.WriteOptions{DryRun: f.dryRun, Subresource: f.subresource})
		}
		if err != nil {
			return err
		}
		verb := "patched"
		if !changed {
			verb = "patched (no change)"
		}
		if err := o.Printed(out, tg.Kind, after, verb, f.dryRun); err != nil {
			return err
		}
	}
	if missing {
		return cli.ErrReported
	}
	return nil
}
