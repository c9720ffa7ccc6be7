package basic

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type getFlags struct {
	output        string
	watch         bool
	selector      string
	fieldSelector string
	showLabels    bool
	noHeaders     bool
	forObject     string
	sortBy        string
	labelColumns  []string
	managedFields bool
}

func newGetCommand(o *cli.Options) *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:   "get KIND [NAME...] | KIND/NAME...",
		Short: "Display one or many objects",
		Long: `Display one or many objects as a table, YAML, JSON or names.

KIND is a kind, plural or short name: pods (po), nodes (no), namespaces (ns),
deployments (deploy), replicasets (rs), services (svc), endpoints (ep),
configmaps (cm), events (ev), secrets, leases; several kinds are comma
separated; "all" is pods, services, deployments and replicasets.
componentstatuses (cs) is the control plane's health, computed by the
apiserver (see tugctl cluster status).`,
		Example: `  tugctl get pods
  tugctl get deploy nginx -o yaml
  tugctl get po,svc -l app=nginx -o wide
  tugctl get pods -o jsonpath='{range .items[*]}{.metadata.name}{"\t"}{.status.podIP}{"\n"}{end}'
  tugctl get pods -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName --sort-by=.spec.nodeName
  tugctl get pods -L app,tier
  tugctl get pods -A --field-selector spec.nodeName=node1
  tugctl get pods -w
  tugctl get events --for deploy/nginx -w
  tugctl get cs`,
		ValidArgsFunction: o.CompleteObjects,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runGet(cmd.Context(), o, args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "output format: wide, yaml, json, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=HEADER:PATH,..., custom-columns-file=FILE, go-template=TEMPLATE, go-template-file=FILE")
	fl.StringVar(&f.sortBy, "sort-by", "", "sort by the value at this field path, e.g. .metadata.creationTimestamp or {.status.podIP}")
	fl.StringSliceVarP(&f.labelColumns, "label-columns", "L", nil, "a column for each of these label keys (comma separated or repeated)")
	fl.BoolVarP(&f.watch, "watch", "w", false, "after listing, print changes as they happen")
	fl.StringVarP(&f.selector, "selector", "l", "", "label selector: a=b,c!=d,e in (x,y),f,!g")
	fl.StringVar(&f.fieldSelector, "field-selector", "", "field selector on any scalar field by JSON path: spec.nodeName=n1,status.phase!=Running")
	fl.BoolVar(&f.showLabels, "show-labels", false, "add a LABELS column")
	fl.BoolVar(&f.noHeaders, "no-headers", false, "omit table headers")
	fl.BoolVar(&f.managedFields, "show-managed-fields", false, "keep metadata.managedFields in yaml, json and template output")
	fl.StringVar(&f.forObject, "for", "", "with events: only those about this object, KIND/NAME")
	return cmd
}

func runGet(ctx context.Context, o *cli.Options, args []string, f *getFlags) error {
	if names, ok := componentStatusArgs(args); ok {
		return runGetComponentStatuses(ctx, o, names, f)
	}
	output, err := printers.ParseOutput(f.output)
	if err != nil {
		return err
	}
	output.NoHeaders = f.noHeaders
	output.ShowManagedFields = f.managedFields
	if f.sortBy != "" && f.watch {
		return fmt.Errorf("--sort-by: not with --watch (a watch prints changes as they come)")
	}
	if _, err := printers.RelaxedJSONPath(f.sortBy); err != nil {
		return fmt.Errorf("--sort-by %s: %v", f.sortBy, err)
	}
	ra, err := cli.ParseResourceArgs(args)
	if err != nil {
		return err
	}
	if f.watch && (len(ra.Kinds) > 1 || kindCount(ra.Refs) > 1) {
		return fmt.Errorf("--watch works on one kind at a time")
	}
	if f.forObject != "" {
		if ra.Named() || len(ra.Kinds) != 1 || ra.Kinds[0].Name != "Event" {
			return fmt.Errorf("--for: only with get events")
		}
		sel, err := eventsForSelector(f.forObject)
		if err != nil {
			return err
		}
		f.fieldSelector = strings.Trim(f.fieldSelector+","+sel, ",")
	}
	var groups []*cli.KindObjects
	failed := false
	if ra.Named() && !f.watch {
		groups, failed, err = o.GetNamed(ctx, ra.Refs)
	} else {
		groups, err = o.List(ctx, ra, f.selectors())
	}
	if err != nil {
		return err
	}
	if f.sortBy != "" {
		for _, g := range groups {
			if err := printers.SortBy(g.Objs, f.sortBy); err != nil {
				return err
			}
		}
	}
	opts := printers.TableOptions{
		Wide: output.Format == printers.Wide, WithNamespace: o.Flags.AllNamespaces, WithKind: len(groups) > 1,
		ShowLabels: f.showLabels, NoHeaders: f.noHeaders, LabelColumns: f.labelColumns,
	}
	now := time.Now()
	total := 0
	var all []v1.Object
	for _, g := range groups {
		total += len(g.Objs)
		all = append(all, g.Objs...)
	}
	var tp *printers.TablePrinter
	switch {
	case total == 0 && !ra.Named() && !f.watch && output.Format != printers.YAML && output.Format != printers.JSON:
		o.NoResources(ra)
	case output.IsTable():
		first := true
		for _, g := range groups {
			if len(g.Objs) == 0 {
				continue
			}
			if !first {
				fmt.Fprintln(o.Out)
			}
			first = false
			tp = &printers.TablePrinter{Kind: g.Kind, Options: opts}
			tp.PrintTable(o.Out, table.For(g.Kind, g.Objs, now))
		}
	default:
		if err := output.Print(o.Out, all, ra.Named() && len(ra.Refs) == 1); err != nil {
			return err
		}
	}
	if f.watch {
		g := groups[0]
		if tp == nil {
			tp = &printers.TablePrinter{Kind: g.Kind, Options: opts}
			if output.IsTable() {
				tp.PrintHeader(o.Out)
			}
		}
		return watch(ctx, o, g, ra, f, output, tp)
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

func (f *getFlags) selectors() cli.Selectors {
	return cli.Selectors{Label: f.selector, Field: f.fieldSelector}
}

func kindCount(refs []cli.Ref) int {
	seen := map[string]bool{}
	for _, r := range refs {
		seen[r.Kind.Name] = true
	}
	return len(seen)
}

// eventsForSelector is the field selector of --for KIND/NAME: events
// whose involvedObject is that object.
func eventsForSelector(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" {
		return "", fmt.Errorf("--for %q: want KIND/NAME, e.g. pod/web or deploy/nginx", arg)
	}
	k, err := cli.LookupKind(kind)
	if err != nil {
		return "", fmt.Errorf("--for %q: %v", arg, err)
	}
	return "involvedObject.kind=" + k.Name + ",involvedObject.name=" + name, nil
}

// watch prints every change after the list, until ctx ends. A watch that
// breaks resumes from the last version seen; an expired version re-lists.
func watch(ctx context.Context, o *cli.Options, g *cli.KindObjects, ra cli.ResourceArgs, f *getFlags, output *printers.Output, tp *printers.TablePrinter) error {
	api, err := o.API(g.Kind)
	if err != nil {
		return err
	}
	ns, err := o.ListNamespace(g.Kind)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, r := range ra.Refs {
		names[r.Name] = true
	}
	rv := g.RV
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := api.Watch(ctx, client.WatchOptions{Namespace: ns, LabelSelector: f.selector, FieldSelector: f.fieldSelector, ResourceVersion: rv})
		if err != nil {
			if apierrors.IsInvalid(err) {
				return err
			}
			if !cli.SleepCtx(ctx, backoff) {
				break
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		for {
			ev, err := w.Next()
			if err != nil {
				w.Stop()
				if apierrors.IsExpired(err) {
					groups, lerr := o.List(ctx, ra, f.selectors())
					if lerr == nil {
						rv = groups[0].RV
						for _, obj := range groups[0].Objs {
							printChange(o, obj, output, tp)
						}
					}
				}
				break
			}
			backoff = 100 * time.Millisecond
			rv = ev.ResourceVersion
			if ev.Type == "BOOKMARK" || (len(names) > 0 && !names[ev.Object.GetMetadata().GetName()]) {
				continue
			}
			printChange(o, ev.Object, output, tp)
		}
	}
	return nil
}

// printChange prints a watched object: a row, or a document.
func printChange(o *cli.Options, obj v1.Object, output *printers.Output, tp *printers.TablePrinter) {
	switch {
	case output.IsTable():
		tp.PrintRow(o.Out, table.RowOf(tp.Kind, obj, time.Now()))
	case output.Format == printers.YAML:
		io.WriteString(o.Out, "---\n")
		_ = output.Print(o.Out, []v1.Object{obj}, true)
	default:
		if err := output.Print(o.Out, []v1.Object{obj}, true); err != nil {
			fmt.Fprintf(o.ErrOut, "error: %v\n", err)
		}
	}
}
