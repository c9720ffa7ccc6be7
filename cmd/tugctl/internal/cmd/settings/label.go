// Package settings is kubectl's "Settings Commands" group: label and
// annotate. Each changes one map of the objects' metadata through
// cli.Change (read, change a copy, send the difference as a strategic
// merge patch), so a concurrent writer's other changes are kept.
package settings

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

// Commands are the group's commands, for the root command.
func Commands(o *cli.Options) []*cobra.Command {
	return []*cobra.Command{newMetaCommand(o, labelsMap), newMetaCommand(o, annotationsMap)}
}

// metaMap is what differs between label and annotate.
type metaMap struct {
	verb  string // "label"
	noun  string // "label"
	field string // "labels"
	get   func(*v1.ObjectMeta) *map[string]string
	// checkValue validates a value (labels have a syntax, annotations not).
	checkValue func(string) error
	// done is kubectl's word for the result: labeled, unlabeled, not
	// labeled; annotate always says annotated.
	done func(set, removed, changed bool) string
}

var labelsMap = metaMap{
	verb: "label", noun: "label", field: "labels",
	get:        func(m *v1.ObjectMeta) *map[string]string { return &m.Labels },
	checkValue: labels.ValidateValue,
	done: func(set, removed, changed bool) string {
		switch {
		case !changed:
			return "not labeled"
		case removed && !set:
			return "unlabeled"
		}
		return "labeled"
	},
}

var annotationsMap = metaMap{
	verb: "annotate", noun: "annotation", field: "annotations",
	get:        func(m *v1.ObjectMeta) *map[string]string { return &m.Annotations },
	checkValue: func(string) error { return nil },
	done:       func(bool, bool, bool) string { return "annotated" },
}

type metaFlags struct {
	overwrite bool
	list      bool
	rv        int64
	dryRun    cli.DryRun
	output    string
	sel       cli.SelectFlags
}

func newMetaCommand(o *cli.Options, mm metaMap) *cobra.Command {
	f := &metaFlags{}
	cmd := &cobra.Command{
		Use:   fmt.Sprintf("%s KIND NAME...|KIND/NAME...|KIND -l SEL|KIND --all|-f FILE KEY=VALUE... KEY-... [--overwrite]", mm.verb),
		Short: fmt.Sprintf("Set or remove %ss of objects", mm.noun),
		Long: fmt.Sprintf(`Set KEY=VALUE %[1]ss and remove KEY- ones on each object.

A %[1]s that is there with another value is only changed with --overwrite;
removing one that is not there says so and goes on. The change is sent as a
patch of metadata.%[2]s alone.`, mm.noun, mm.field),
		Example: fmt.Sprintf(`  tugctl %[1]s pods web-1 tier=front
  tugctl %[1]s deploy/web tier=back --overwrite
  tugctl %[1]s pods -l app=web tier-
  tugctl %[1]s nodes --all zone=a --dry-run=server`, mm.verb),
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMeta(cmd.Context(), o, mm, args, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.overwrite, "overwrite", false, fmt.Sprintf("change %ss that are already set to another value", mm.noun))
	fl.BoolVar(&f.list, "list", false, fmt.Sprintf("print the %ss of each object", mm.noun))
	fl.Int64Var(&f.rv, "resource-version", 0, "change the object only if it is still at this resourceVersion")
	fl.StringVarP(&f.output, "output", "o", "", "print the changed objects: yaml, json, name or a template")
	cli.RegisterDryRun(cmd, &f.dryRun)
	f.sel.Register(cmd)
	return cmd
}

// metaChange is the command line's KEY=VALUE and KEY- arguments.
type metaChange struct {
	set    map[string]string
	remove []string
}

// splitMetaArgs separates the objects from the changes: the changes are
// the arguments from the first KEY=VALUE or KEY- on.
func splitMetaArgs(mm metaMap, args []string, list bool) ([]string, metaChange, error) {
	ch := metaChange{set: map[string]string{}}
	i := slices.IndexFunc(args, func(a string) bool { return strings.Contains(a, "=") || strings.HasSuffix(a, "-") })
	if i < 0 {
		if list {
			return args, ch, nil
		}
		return nil, ch, fmt.Errorf("at least one %s update is required (KEY=VALUE or KEY-)", mm.noun)
	}
	objs := args[:i]
	for _, a := range args[i:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			if strings.Contains(v, "=") {
				return nil, ch, fmt.Errorf("invalid %s spec: %s", mm.noun, a)
			}
			if err := labels.ValidateKey(k); err != nil {
				return nil, ch, fmt.Errorf("invalid %s spec %q: key %q: %v", mm.noun, a, k, err)
			}
			if err := mm.checkValue(v); err != nil {
				return nil, ch, fmt.Errorf("invalid %s spec %q: value %q: %v", mm.noun, a, v, err)
			}
			if _, dup := ch.set[k]; dup {
				return nil, ch, fmt.Errorf("invalid %s spec: %q is given twice", mm.noun, k)
			}
			ch.set[k] = v
			continue
		}
		k, ok := strings.CutSuffix(a, "-")
		if !ok || k == "" {
			return nil, ch, fmt.Errorf("invalid %s spec %q: want KEY=VALUE or KEY- (and the objects before them)", mm.noun, a)
		}
		if err := labels.ValidateKey(k); err != nil {
			return nil, ch, fmt.Errorf("invalid %s spec %q: key %q: %v", mm.noun, a, k, err)
		}
		if _, both := ch.set[k]; both {
			return nil, ch, fmt.Errorf("can not both modify and remove the %s %q in the same command", mm.noun, k)
		}
		ch.remove = append(ch.remove, k)
	}
	for _, k := range ch.remove {
		if _, both := ch.set[k]; both {
			return nil, ch, fmt.Errorf("can not both modify and remove the %s %q in the same command", mm.noun, k)
		}
	}
	return objs, ch, nil
}

func runMeta(ctx context.Context, o *cli.Options, mm metaMap, args []string, f *metaFlags) error {
	objArgs, ch, err := splitMetaArgs(mm, args, f.list)
	if err != nil {
		return err
	}
	out, err := cli.DocumentOutput(f.output)
	if err != nil {
		return err
	}
	if len(objArgs) == 0 && len(f.sel.Files.Files) == 0 {
		return fmt.Errorf("name the objects to %s: KIND NAME, KIND/NAME, KIND -l SELECTOR, KIND --all or -f FILE", mm.verb)
	}
	targets, missing, err := o.Select(ctx, objArgs, f.sel)
	if err != nil {
		return err
	}
	// Every object is checked before any is changed: an --overwrite
	// refusal changes nothing.
	for _, t := range targets {
		if f.rv != 0 && t.Obj.GetMetadata().GetResourceVersion() != f.rv {
			return fmt.Errorf("%s %q: the object has been modified (resourceVersion %d, --resource-version %d); nothing was changed",
				t.Kind.Plural, t.Obj.GetMetadata().GetName(), t.Obj.GetMetadata().GetResourceVersion(), f.rv)
		}
		if f.overwrite {
			continue
		}
		cur := *mm.get(t.Obj.GetMetadata())
		var clash []string
		for _, k := range slices.Sorted(maps.Keys(ch.set)) {
			if v, ok := cur[k]; ok && v != ch.set[k] {
				clash = append(clash, fmt.Sprintf("'%s' already has a value (%s)", k, v))
			}
		}
		if len(clash) > 0 {
			return fmt.Errorf("%s/%s: %s, and --overwrite is false; nothing was changed", strings.ToLower(t.Kind.Name), t.Obj.GetMetadata().GetName(), strings.Join(clash, "; "))
		}
	}
	for _, t := range targets {
		if f.list {
			for _, k := range slices.Sorted(maps.Keys(*mm.get(t.Obj.GetMetadata()))) {
				fmt.Fprintf(o.Out, "%s=%s\n", k, (*mm.get(t.Obj.GetMetadata()))[k])
			}
			if len(ch.set) == 0 && len(ch.remove) == 0 {
				continue
			}
		}
		for _, k := range ch.remove {
			if _, ok := (*mm.get(t.Obj.GetMetadata()))[k]; !ok {
				fmt.Fprintf(o.ErrOut, "%s %q not found.\n", mm.noun, k)
			}
		}
		after, changed, err := o.Change(ctx, t, cli.WriteOptions{DryRun: f.dryRun, ResourceVersion: f.rv}, func(obj v1.Object) error {
			m := mm.get(v1.Meta(obj))
			if *m == nil {
				*m = map[string]string{}
			}
			maps.Copy(*m, ch.set)
			for _, k := range ch.remove {
				delete(*m, k)
			}
			if len(*m) == 0 {
				*m = nil
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := o.Printed(out, t.Kind, after, mm.done(len(ch.set) > 0, len(ch.remove) > 0, changed), f.dryRun); err != nil {
			return err
		}
	}
	if missing {
		return cli.ErrReported
	}
	return nil
}
