package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/manifest"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// The commands that change objects (label, annotate, patch, set, edit,
// and the dry runs of apply, create and delete) share three things: the
// --dry-run flag, the objects they are pointed at (KIND NAME..., KIND/NAME,
// -l, --all, -f), and the way a change is sent: the stored object is read,
// changed locally, and the difference sent as a strategic merge patch
// (Objects.Patch), as kubectl sends it, so that whatever another writer
// changed meanwhile in the rest of the object is kept.

// DryRun is the --dry-run flag: "none" writes, "client" only prints what
// would be sent, "server" has the apiserver validate, default and admit
// the write and answer with the result, storing nothing.
type DryRun string

const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// RegisterDryRun adds --dry-run to cmd (--dry-run alone is "client", as
// kubectl's deprecated bare flag).
func RegisterDryRun(cmd *cobra.Command, d *DryRun) {
	*d = DryRunNone
	cmd.Flags().Var((*dryRunValue)(d), "dry-run", `"none" writes; "client" only prints the object that would be sent; "server" has the apiserver check the write (validation, defaults, admission) and print the result, storing nothing`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = string(DryRunClient)
}

type dryRunValue DryRun

func (d *dryRunValue) String() string { return string(*d) }
func (d *dryRunValue) Type() string   { return "string" }
func (d *dryRunValue) Set(s string) error {
	switch DryRun(s) {
	case DryRunNone, DryRunClient, DryRunServer:
		*d = dryRunValue(s)
		return nil
	case "":
		*d = dryRunValue(DryRunNone)
		return nil
	}
	return fmt.Errorf(`want "none", "client" or "server"`)
}

// Suffix is what kubectl adds to its "kind/name verb" line.
func (d DryRun) Suffix() string {
	switch d {
	case DryRunClient:
		return " (dry run)"
	case DryRunServer:
		return " (server dry run)"
	}
	return ""
}

// On reports whether nothing is to be stored.
func (d DryRun) On() bool { return d == DryRunClient || d == DryRunServer }

// WriteAPI is the API of kind k for writes: a server-side dry run with
// --dry-run=server.
func (o *Options) WriteAPI(k *kinds.Kind, d DryRun) (*client.Typed[v1.Object], error) {
	api, err := o.API(k)
	if err != nil {
		return nil, err
	}
	if d == DryRunServer {
		api = api.DryRun()
	}
	return api, nil
}

// WriteOptions are how a change is written: --dry-run, and a
// resourceVersion precondition (--resource-version; 0 is none).
type WriteOptions struct {
	DryRun          DryRun
	ResourceVersion int64
	// Subresource "status" writes the status alone, "resize" a pod's
	// containers' resources (patch --subresource).
	Subresource string
}

// Target is one object a changing command acts on, as read.
type Target struct {
	Kind *kinds.Kind
	Obj  v1.Object
}

// SelectFlags are how a changing command is pointed at objects besides
// naming them: -l, --all and -f.
type SelectFlags struct {
	Selector string
	All      bool
	Files    FileFlags
}

// Register adds -l, --all and -f/-R to cmd.
func (s *SelectFlags) Register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&s.Selector, "selector", "l", "", "act on the objects of the kind with these labels (app=web,tier!=db)")
	cmd.Flags().BoolVar(&s.All, "all", false, "act on every object of the kind in the namespace (all namespaces with -A)")
	s.Files.Register(cmd, "naming the objects to change")
}

// Select reads the objects args (KIND NAME..., KIND/NAME..., or KIND with
// -l or --all) or -f name, as stored. A named object that does not exist is
// reported on ErrOut as kubectl does and the others are still returned;
// missing says whether one was.
func (o *Options) Select(ctx context.Context, args []string, s SelectFlags) (targets []Target, missing bool, err error) {
	if len(s.Files.Files) > 0 {
		if len(args) > 0 {
			return nil, false, fmt.Errorf("-f and objects named on the command line (%s) do not go together", strings.Join(args, " "))
		}
		objs, err := o.ReadManifests(s.Files.Files, s.Files.Recursive)
		if err != nil {
			return nil, false, err
		}
		var refs []Ref
		for _, mo := range objs {
			if err := o.PlaceObject(mo); err != nil {
				return nil, false, err
			}
			refs = append(refs, Ref{Kind: mo.Kind, Name: mo.Object.GetMetadata().GetName(), Namespace: mo.Object.GetMetadata().GetNamespace()})
		}
		return o.getTargets(ctx, refs)
	}
	ra, err := ParseResourceArgs(args)
	if err != nil {
		return nil, false, err
	}
	if _, err := labels.Parse(s.Selector); err != nil {
		return nil, false, fmt.Errorf("-l %q: %v", s.Selector, err)
	}
	switch {
	case ra.Named() && (s.Selector != "" || s.All):
		return nil, false, fmt.Errorf("name objects, or select them with -l or --all, not both")
	case ra.Named():
		return o.getTargets(ctx, ra.Refs)
	case s.Selector == "" && !s.All:
		return nil, false, fmt.Errorf("%s: name the objects (KIND NAME or KIND/NAME), or select them with -l SELECTOR or --all", args[0])
	}
	groups, err := o.List(ctx, ra, Selectors{Label: s.Selector})
	if err != nil {
		return nil, false, err
	}
	for _, g := range groups {
		for _, obj := range g.Objs {
			targets = append(targets, Target{Kind: g.Kind, Obj: obj})
		}
	}
	if len(targets) == 0 {
		o.NoResources(ra)
	}
	return targets, false, nil
}

func (o *Options) getTargets(ctx context.Context, refs []Ref) ([]Target, bool, error) {
	groups, missing, err := o.GetNamed(ctx, refs)
	if err != nil {
		return nil, false, err
	}
	// GetNamed groups by kind; keep the command line's order instead.
	var out []Target
	for _, r := range refs {
		for _, g := range groups {
			for _, obj := range g.Objs {
				m := obj.GetMetadata()
				if g.Kind == r.Kind && m.GetName() == r.Name && (r.Namespace == "" || m.GetNamespace() == r.Namespace) {
					out = append(out, Target{Kind: g.Kind, Obj: obj})
				}
			}
		}
	}
	return out, missing, nil
}

// ObjectJSON is obj's Kubernetes-shaped JSON, the form patches are made
// against.
func ObjectJSON(obj v1.Object) ([]byte, error) {
	m, err := manifest.ToMap(obj)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Change sends what fn changes in a copy of t's object: fn edits the copy
// (an error from it is returned and nothing is sent); the difference goes
// to the apiserver as a strategic merge patch, or with --dry-run=client
// the changed copy is only defaulted and validated, as the server would.
// It returns the object as stored after the change (as it would be, for a
// dry run) and whether anything changed.
func (o *Options) Change(ctx context.Context, t Target, w WriteOptions, fn func(v1.Object) error) (v1.Object, bool, error) {
	next := proto.Clone(t.Obj).(v1.Object)
	if err := fn(next); err != nil {
		return nil, false, err
	}
	return o.SendChange(ctx, t, next, w)
}

// SendChange sends the difference between t's object and next, as Change.
func (o *Options) SendChange(ctx context.Context, t Target, next v1.Object, w WriteOptions) (v1.Object, bool, error) {
	cur := t.Obj
	if proto.Equal(cur, next) {
		return cur, false, nil
	}
	if w.DryRun == DryRunClient {
		t.Kind.Default(next)
		if err := t.Kind.Validate(next).Err(t.Kind.Name, next.GetMetadata().GetName()); err != nil {
			return nil, false, err
		}
		return next, true, nil
	}
	before, err := ObjectJSON(cur)
	if err != nil {
		return nil, false, err
	}
	after, err := ObjectJSON(next)
	if err != nil {
		return nil, false, err
	}
	p, err := patch.TwoWay(cur.ProtoReflect().Descriptor(), before, after)
	if err != nil {
		return nil, false, err
	}
	if string(p) == "{}" {
		return cur, false, nil
	}
	return o.SendPatch(ctx, t, string(patch.Strategic), p, w)
}

// SendPatch sends a patch of type typ to t's object and reports whether
// it changed the object (its resource version moved, or for a server dry
// run the answer differs from what was read).
func (o *Options) SendPatch(ctx context.Context, t Target, typ string, p []byte, w WriteOptions) (v1.Object, bool, error) {
	api, err := o.WriteAPI(t.Kind, w.DryRun)
	if err != nil {
		return nil, false, err
	}
	m := t.Obj.GetMetadata()
	out, err := api.Patch(ctx, m.GetNamespace(), m.GetName(), typ, p, client.PatchOptions{ResourceVersion: w.ResourceVersion, Subresource: w.Subresource})
	if err != nil {
		return nil, false, ServerError(t.Kind, m.GetName(), err)
	}
	if w.DryRun == DryRunServer {
		return out, !proto.Equal(out, t.Obj), nil
	}
	return out, out.GetMetadata().GetResourceVersion() != m.GetResourceVersion(), nil
}

// PatchLocally is a patch's --dry-run=client: applied to t's object here
// as the apiserver would apply it (patch.Object), then defaulted and
// validated.
func (o *Options) PatchLocally(t Target, typ patch.Type, p []byte) (v1.Object, bool, error) {
	next, err := patch.Object(t.Obj, typ, p)
	if err != nil {
		return nil, false, err
	}
	return o.SendChange(context.Background(), t, next, WriteOptions{DryRun: DryRunClient})
}

// ServerError is how kubectl words the errors of a write to one object:
// `Error from server (NotFound): deployments.apps "web" not found`; an
// invalid object keeps the apiserver's message, which names the fields.
func ServerError(k *kinds.Kind, name string, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%s %q not found", printers.QualifiedPlural(k), name)
	}
	return err
}

// Printed prints a changed object as -o asks (out non-nil), else
// kubectl's line "kind/name verb" with the dry run's suffix.
func (o *Options) Printed(out *printers.Output, k *kinds.Kind, obj v1.Object, verb string, d DryRun) error {
	if out != nil {
		return out.Print(o.Out, []v1.Object{obj}, true)
	}
	fmt.Fprintf(o.Out, "%s %s%s\n", printers.ObjectName(k, obj), verb, d.Suffix())
	return nil
}

// DocumentOutput parses the -o of a command that prints the objects it
// changed: "" prints kubectl's line; yaml, json, name or a template the
// objects.
func DocumentOutput(s string) (*printers.Output, error) {
	if s == "" {
		return nil, nil
	}
	out, err := printers.ParseOutput(s)
	if err != nil {
		return nil, err
	}
	if out.IsTable() {
		return nil, fmt.Errorf("--output %q: want yaml, json, name or a template here", s)
	}
	return out, nil
}
