package tugctl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// errReported is returned by commands that have already printed their
// errors: Run exits 1 without printing more.
var errReported = errors.New("errors reported above")

type getFlags struct {
	output        string
	watch         bool
	selector      string
	fieldSelector string
	showLabels    bool
	noHeaders     bool
	forObject     string
}

func newGetCommand(o *Options) *cobra.Command {
	f := &getFlags{}
	cmd := &cobra.Command{
		Use:   "get KIND [NAME...] | KIND/NAME...",
		Short: "Display one or many objects",
		Long: `Display one or many objects as a table, YAML, JSON or names.

KIND is a kind, plural or short name: pods (po), nodes (no), namespaces (ns),
deployments (deploy), replicasets (rs), services (svc), endpoints (ep),
configmaps (cm), events (ev), secrets, leases; several kinds are comma
separated; "all" is pods, services, deployments and replicasets.`,
		Example: `  tugctl get pods
  tugctl get deploy nginx -o yaml
  tugctl get po,svc -l app=nginx -o wide
  tugctl get pods -A --field-selector spec.nodeName=node1
  tugctl get pods -w
  tugctl get events --for deploy/nginx -w`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runGet(cmd.Context(), args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "output format: wide, yaml, json or name")
	fl.BoolVarP(&f.watch, "watch", "w", false, "after listing, print changes as they happen")
	fl.StringVarP(&f.selector, "selector", "l", "", "label selector: a=b,c!=d,e in (x,y),f,!g")
	fl.StringVar(&f.fieldSelector, "field-selector", "", "field selector on any scalar field by JSON path: spec.nodeName=n1,status.phase!=Running")
	fl.BoolVar(&f.showLabels, "show-labels", false, "add a LABELS column")
	fl.BoolVar(&f.noHeaders, "no-headers", false, "omit table headers")
	fl.StringVar(&f.forObject, "for", "", "with events: only those about this object, KIND/NAME")
	return cmd
}

// kindObjects are the objects found for one kind.
type kindObjects struct {
	kind *kinds.Kind
	objs []v1.Object
	rv   int64
}

func (o *Options) runGet(ctx context.Context, args []string, f *getFlags) error {
	output, err := parseOutput(f.output)
	if err != nil {
		return err
	}
	ra, err := parseResourceArgs(args)
	if err != nil {
		return err
	}
	if f.watch && (len(ra.kinds) > 1 || kindCount(ra.refs) > 1) {
		return fmt.Errorf("--watch works on one kind at a time")
	}
	if f.forObject != "" {
		if ra.named() || len(ra.kinds) != 1 || ra.kinds[0].Name != "Event" {
			return fmt.Errorf("--for: only with get events")
		}
		sel, err := eventsForSelector(f.forObject)
		if err != nil {
			return err
		}
		f.fieldSelector = strings.Trim(f.fieldSelector+","+sel, ",")
	}
	var groups []*kindObjects
	failed := false
	if ra.named() && !f.watch {
		groups, failed, err = o.getNamed(ctx, ra.refs)
	} else {
		groups, err = o.list(ctx, ra, f)
	}
	if err != nil {
		return err
	}
	p := printOptions{
		output: output, withNamespace: o.flags.allNamespaces, withKind: len(groups) > 1,
		showLabels: f.showLabels, noHeaders: f.noHeaders, now: time.Now(),
	}
	total := 0
	var all []v1.Object
	for _, g := range groups {
		total += len(g.objs)
		all = append(all, g.objs...)
	}
	var tbl *table
	switch {
	case total == 0 && !ra.named() && !f.watch && output != outYAML && output != outJSON:
		o.noResources(ra)
	case output == outTable || output == outWide:
		first := true
		for _, g := range groups {
			if len(g.objs) == 0 {
				continue
			}
			if !first {
				fmt.Fprintln(o.Out)
			}
			first = false
			tbl = writeTable(o.Out, g.kind, g.objs, p)
		}
	default:
		if err := writeObjects(o.Out, all, output, ra.named() && len(ra.refs) == 1); err != nil {
			return err
		}
	}
	if f.watch {
		g := groups[0]
		if tbl == nil {
			tbl = &table{}
			if (output == outTable || output == outWide) && !p.noHeaders {
				tbl.writeRow(o.Out, p.headers(g.kind))
			}
		}
		return o.watch(ctx, g, ra, f, p, tbl)
	}
	if failed {
		return errReported
	}
	return nil
}

func kindCount(refs []ref) int {
	seen := map[string]bool{}
	for _, r := range refs {
		seen[r.kind.Name] = true
	}
	return len(seen)
}

func (o *Options) noResources(ra resourceArgs) {
	k := ra.kinds[0]
	ns, _ := o.listNamespace(k)
	if ns != "" {
		fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", ns)
		return
	}
	fmt.Fprintln(o.ErrOut, "No resources found")
}

// getNamed reads named objects, reporting the missing ones on ErrOut as
// kubectl does and going on with the rest.
func (o *Options) getNamed(ctx context.Context, refs []ref) ([]*kindObjects, bool, error) {
	var groups []*kindObjects
	byKind := map[string]*kindObjects{}
	failed := false
	for _, r := range refs {
		api, err := o.api(r.kind)
		if err != nil {
			return nil, false, err
		}
		ns, err := o.objectNamespace(r.kind)
		if err != nil {
			return nil, false, err
		}
		obj, err := api.Get(ctx, ns, r.name)
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(o.ErrOut, "Error from server (NotFound): %s %q not found\n", qualifiedPlural(r.kind), r.name)
			failed = true
			continue
		}
		if err != nil {
			return nil, false, err
		}
		g := byKind[r.kind.Name]
		if g == nil {
			g = &kindObjects{kind: r.kind}
			byKind[r.kind.Name] = g
			groups = append(groups, g)
		}
		g.objs = append(g.objs, obj)
	}
	return groups, failed, nil
}

// qualifiedPlural is "pods", "deployments.apps": how kubectl names a kind
// in server messages.
func qualifiedPlural(k *kinds.Kind) string {
	if g := group(k); g != "" {
		return k.Plural + "." + g
	}
	return k.Plural
}

// list lists every kind of ra (or the kind of its refs, filtered to the
// named objects, for --watch).
func (o *Options) list(ctx context.Context, ra resourceArgs, f *getFlags) ([]*kindObjects, error) {
	ks := ra.kinds
	names := map[string]bool{}
	if ra.named() {
		ks = []*kinds.Kind{ra.refs[0].kind}
		for _, r := range ra.refs {
			names[r.name] = true
		}
	}
	var groups []*kindObjects
	for _, k := range ks {
		api, err := o.api(k)
		if err != nil {
			return nil, err
		}
		ns, err := o.listNamespace(k)
		if err != nil {
			return nil, err
		}
		objs, rv, err := api.List(ctx, client.ListOptions{Namespace: ns, LabelSelector: f.selector, FieldSelector: f.fieldSelector})
		if err != nil {
			return nil, err
		}
		g := &kindObjects{kind: k, rv: rv}
		for _, obj := range objs {
			if len(names) == 0 || names[obj.GetMetadata().GetName()] {
				g.objs = append(g.objs, obj)
			}
		}
		sortForDisplay(k, g.objs)
		groups = append(groups, g)
	}
	return groups, nil
}

// eventsForSelector is the field selector of --for KIND/NAME: events
// whose involvedObject is that object.
func eventsForSelector(arg string) (string, error) {
	kind, name, ok := strings.Cut(arg, "/")
	if !ok || kind == "" || name == "" {
		return "", fmt.Errorf("--for %q: want KIND/NAME, e.g. pod/web or deploy/nginx", arg)
	}
	k, err := lookupKind(kind)
	if err != nil {
		return "", fmt.Errorf("--for %q: %v", arg, err)
	}
	return "involvedObject.kind=" + k.Name + ",involvedObject.name=" + name, nil
}

// sortForDisplay orders events by when they were last seen (oldest first,
// so the newest is at the bottom of the terminal), everything else by
// namespace and name.
func sortForDisplay(k *kinds.Kind, objs []v1.Object) {
	sortObjects(objs)
	if k.Name == "Event" {
		sort.SliceStable(objs, func(i, j int) bool {
			return eventTime(objs[i].(*v1.Event)).Before(eventTime(objs[j].(*v1.Event)))
		})
	}
}

// watch prints every change after the list, until ctx ends. A watch that
// breaks resumes from the last version seen; an expired version re-lists.
func (o *Options) watch(ctx context.Context, g *kindObjects, ra resourceArgs, f *getFlags, p printOptions, tbl *table) error {
	api, err := o.api(g.kind)
	if err != nil {
		return err
	}
	ns, err := o.listNamespace(g.kind)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, r := range ra.refs {
		names[r.name] = true
	}
	rv := g.rv
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := api.Watch(ctx, client.WatchOptions{Namespace: ns, LabelSelector: f.selector, FieldSelector: f.fieldSelector, ResourceVersion: rv})
		if err != nil {
			if apierrors.IsInvalid(err) {
				return err
			}
			if !sleepCtx(ctx, backoff) {
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
					groups, lerr := o.list(ctx, ra, f)
					if lerr == nil {
						rv = groups[0].rv
						for _, obj := range groups[0].objs {
							o.printChange(obj, g.kind, p, tbl)
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
			o.printChange(ev.Object, g.kind, p, tbl)
		}
	}
	return nil
}

func (o *Options) printChange(obj v1.Object, k *kinds.Kind, p printOptions, tbl *table) {
	p.now = time.Now()
	switch p.output {
	case outTable, outWide:
		tbl.writeRow(o.Out, p.row(k, obj))
	case outYAML:
		io.WriteString(o.Out, "---\n")
		_ = writeObjects(o.Out, []v1.Object{obj}, p.output, true)
	default:
		_ = writeObjects(o.Out, []v1.Object{obj}, p.output, true)
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
