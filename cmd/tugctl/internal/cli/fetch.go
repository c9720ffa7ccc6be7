package cli

import (
	"context"
	"fmt"
	"sort"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// KindObjects are the objects found for one kind, and the version of the
// list (to watch from).
type KindObjects struct {
	Kind *kinds.Kind
	Objs []v1.Object
	RV   int64
}

// GetNamed reads named objects, reporting the missing ones on ErrOut as
// kubectl does and going on with the rest; missing says whether any was.
func (o *Options) GetNamed(ctx context.Context, refs []Ref) (groups []*KindObjects, missing bool, err error) {
	byKind := map[string]*KindObjects{}
	for _, r := range refs {
		api, err := o.API(r.Kind)
		if err != nil {
			return nil, false, err
		}
		ns, err := o.ObjectNamespace(r.Kind)
		if err != nil {
			return nil, false, err
		}
		if r.Namespace != "" && r.Kind.Namespaced {
			ns = r.Namespace
		}
		obj, err := api.Get(ctx, ns, r.Name)
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(o.ErrOut, "Error from server (NotFound): %s %q not found\n", printers.QualifiedPlural(r.Kind), r.Name)
			missing = true
			continue
		}
		if err != nil {
			return nil, false, err
		}
		g := byKind[r.Kind.Name]
		if g == nil {
			g = &KindObjects{Kind: r.Kind}
			byKind[r.Kind.Name] = g
			groups = append(groups, g)
		}
		g.Objs = append(g.Objs, obj)
	}
	return groups, missing, nil
}

// Selectors are the label and field selectors of a list (-l,
// --field-selector).
type Selectors struct {
	Label, Field string
}

// List lists every kind of ra (or the kind of its refs, filtered to the
// named objects, for a watch), in the namespace of the request (all with
// -A), in display order (see SortForDisplay).
func (o *Options) List(ctx context.Context, ra ResourceArgs, sel Selectors) ([]*KindObjects, error) {
	ks := ra.Kinds
	names := map[string]bool{}
	if ra.Named() {
		ks = []*kinds.Kind{ra.Refs[0].Kind}
		for _, r := range ra.Refs {
			names[r.Name] = true
		}
	}
	var groups []*KindObjects
	for _, k := range ks {
		api, err := o.API(k)
		if err != nil {
			return nil, err
		}
		ns, err := o.ListNamespace(k)
		if err != nil {
			return nil, err
		}
		objs, rv, err := api.List(ctx, client.ListOptions{Namespace: ns, LabelSelector: sel.Label, FieldSelector: sel.Field})
		if err != nil {
			return nil, err
		}
		g := &KindObjects{Kind: k, RV: rv}
		for _, obj := range objs {
			if len(names) == 0 || names[obj.GetMetadata().GetName()] {
				g.Objs = append(g.Objs, obj)
			}
		}
		SortForDisplay(k, g.Objs)
		groups = append(groups, g)
	}
	return groups, nil
}

// NoResources says on ErrOut that a list found nothing, as kubectl does.
func (o *Options) NoResources(ra ResourceArgs) {
	k := ra.Kinds[0]
	ns, _ := o.ListNamespace(k)
	if ns != "" {
		fmt.Fprintf(o.ErrOut, "No resources found in %s namespace.\n", ns)
		return
	}
	fmt.Fprintln(o.ErrOut, "No resources found")
}

// SortObjects orders objects by namespace and name, as the server does.
func SortObjects(objs []v1.Object) {
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := objs[i].GetMetadata(), objs[j].GetMetadata()
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
}

// SortForDisplay orders events by when they were last seen (oldest first,
// so the newest is at the bottom of the terminal), everything else by
// namespace and name.
func SortForDisplay(k *kinds.Kind, objs []v1.Object) {
	SortObjects(objs)
	if k.Name == "Event" {
		sort.SliceStable(objs, func(i, j int) bool {
			return table.EventTime(objs[i].(*v1.Event)).Before(table.EventTime(objs[j].(*v1.Event)))
		})
	}
}
