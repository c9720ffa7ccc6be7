package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/manifest"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
)

type applyFlags struct {
	files     cli.FileFlags
	dryRun    cli.DryRun
	output    string
	overwrite bool
	prune     bool
	selector  string
}

func newApplyCommand(o *cli.Options) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|- | -k DIR",
		Short: "Create objects from manifests, or update them to match",
		Long: `Create each object of the manifests, or update it if it exists.

As kubectl's client-side apply: the manifest applied is kept in the
annotation kubectl.kubernetes.io/last-applied-configuration, and an update
is the three-way strategic merge patch between that last manifest, the new
one and the live object: a field the manifest sets is set; a field the
last manifest had and this one has not is removed; a field the manifests
never had (replicas after a scale, a pod's node, a service's cluster IP and
node ports, a controller's annotations) is kept. The patch is applied by
the apiserver to the object as stored, so a concurrent change elsewhere in
the object is kept too. Prints created, configured or unchanged.

--prune -l SELECTOR then deletes the objects matching the selector that an
earlier apply made (they have the annotation) and that the manifests no
longer hold, in the namespaces applied to.`,
		Example: `  tugctl apply -f nginx.yaml
  tugctl apply -f manifests/ -R
  tugctl apply -k overlays/prod
  tugctl apply -f app/ --prune -l app=web
  cat pod.json | tugctl apply -f - --dry-run=server -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd.Context(), o, f)
		},
	}
	f.files.Register(cmd, "to apply")
	f.files.RegisterKustomize(cmd, "to apply")
	fl := cmd.Flags()
	fl.StringVarP(&f.output, "output", "o", "", "print the applied objects: yaml, json, name or a template")
	fl.BoolVar(&f.overwrite, "overwrite", true, "a field the manifest changes wins over a change made to the live object since the last apply; false makes that a conflict error")
	fl.BoolVar(&f.prune, "prune", false, "delete the objects an earlier apply made that match -l and the manifests no longer hold")
	fl.StringVarP(&f.selector, "selector", "l", "", "with --prune: the label selector of the objects to prune; without: apply only the manifests' objects with these labels")
	cli.RegisterDryRun(cmd, &f.dryRun)
	return cmd
}

func runApply(ctx context.Context, o *cli.Options, f *applyFlags) error {
	out, err := cli.DocumentOutput(f.output)
	if err != nil {
		return err
	}
	if f.prune && f.selector == "" {
		return fmt.Errorf("--prune: needs -l SELECTOR, naming the objects that may be pruned")
	}
	// Each document that decodes is applied; each refused one is
	// reported (file, document, kind/name, field) and makes the exit
	// status 1, as kubectl apply does.
	objs, derr := o.ReadInputEach(f.files)
	if len(objs) == 0 {
		return derr
	}
	if f.selector != "" {
		if objs, err = selectManifests(objs, f.selector); err != nil {
			return err
		}
	}
	failed := o.ReportEach(derr)
	var valid []manifest.Object
	for _, mo := range objs {
		if mo.Object.GetMetadata().GetName() == "" {
			fmt.Fprintf(o.ErrOut, "error: %s (%s): metadata.name: required (apply finds objects by name; create accepts metadata.generateName)\n", mo.Source, mo.Kind.Name)
			failed = true
			continue
		}
		if err := o.PlaceObject(mo); err != nil {
			fmt.Fprintf(o.ErrOut, "error: %v\n", err)
			failed = true
			continue
		}
		valid = append(valid, mo)
	}
	refused := failed
	for _, mo := range valid {
		a, err := applyOne(ctx, o, mo, applyOptions{dryRun: f.dryRun, overwrite: f.overwrite, record: true})
		if errors.Is(err, apierrors.ErrUnavailable) {
			return err // the server is unreachable: the rest would fail the same way
		}
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: %s (%s %s): %v\n", mo.Source, mo.Kind.Name, mo.Object.GetMetadata().GetName(), err)
			failed = true
			continue
		}
		if err := o.Printed(out, mo.Kind, a.out, a.result, f.dryRun); err != nil {
			return err
		}
	}
	if f.prune && refused {
		// The refused documents' objects would look gone from the
		// manifests: pruning now could delete what the user still means.
		fmt.Fprintf(o.ErrOut, "error: --prune: skipped, some documents were refused (fix them and apply again)\n")
	} else if f.prune {
		if err := prune(ctx, o, valid, f.selector, f.dryRun); err != nil {
			return err
		}
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// applied is what applying one object did, or would do.
type applied struct {
	result string    // created, configured or unchanged
	live   v1.Object // the object before; nil when it did not exist
	out    v1.Object // the object after (as it would be, for a dry run)
}

// applyOptions qualify applyOne.
type applyOptions struct {
	dryRun    cli.DryRun
	overwrite bool
	// record keeps the manifest in the last-applied annotation; diff
	// leaves it out, as kubectl diff does, so only the manifest's own
	// changes show.
	record bool
}

// applyOne creates the object of a manifest, or sends the three-way patch
// that makes the live object what the manifest asks (see newApplyCommand).
func applyOne(ctx context.Context, o *cli.Options, mo manifest.Object, opts applyOptions) (applied, error) {
	d := opts.dryRun
	read, err := o.API(mo.Kind)
	if err != nil {
		return applied{}, err
	}
	write, err := o.WriteAPI(mo.Kind, d)
	if err != nil {
		return applied{}, err
	}
	want, err := appliedForm(mo.Object, opts.record)
	if err != nil {
		return applied{}, err
	}
	modified, err := cli.ObjectJSON(want)
	if err != nil {
		return applied{}, err
	}
	wm := v1.Meta(want)
	md := want.ProtoReflect().Descriptor()
	for attempt := 0; ; attempt++ {
		cur, err := read.Get(ctx, wm.Namespace, wm.Name)
		if apierrors.IsNotFound(err) {
			obj := proto.Clone(want).(v1.Object)
			if d == cli.DryRunClient {
				mo.Kind.Default(obj)
				return applied{result: "created", out: obj}, mo.Kind.Validate(obj).Err(mo.Kind.Name, wm.Name)
			}
			out, err := write.Create(ctx, obj)
			if apierrors.IsAlreadyExists(err) && attempt < 5 {
				continue // created meanwhile: update it instead
			}
			if err != nil {
				return applied{}, err
			}
			return applied{result: "created", out: out}, nil
		}
		if err != nil {
			return applied{}, err
		}
		current, err := cli.ObjectJSON(cur)
		if err != nil {
			return applied{}, err
		}
		original := []byte(cur.GetMetadata().GetAnnotations()[v1.LastAppliedAnnotation])
		p, err := patch.ThreeWay(md, original, modified, current, opts.overwrite)
		if err != nil {
			return applied{}, err
		}
		if string(p) == "{}" {
			return applied{result: "unchanged", live: cur, out: cur}, nil
		}
		t := cli.Target{Kind: mo.Kind, Obj: cur}
		var out v1.Object
		var changed bool
		if d == cli.DryRunClient {
			out, changed, err = o.PatchLocally(t, patch.Strategic, p)
		} else {
			out, changed, err = o.SendPatch(ctx, t, string(patch.Strategic), p, cli.WriteOptions{DryRun: d})
		}
		if apierrors.IsNotFound(err) && attempt < 5 {
			continue // deleted meanwhile: create it
		}
		if err != nil {
			return applied{}, err
		}
		if !changed {
			return applied{result: "unchanged", live: cur, out: out}, nil
		}
		return applied{result: "configured", live: cur, out: out}, nil
	}
}

// appliedForm is the object a manifest asks for, as apply sends it: what
// the server owns taken out (input saved with get -o yaml has it: uid,
// resourceVersion, status, ...) and, with record, the manifest itself, as
// one line of JSON, in the last-applied annotation.
func appliedForm(obj v1.Object, record bool) (v1.Object, error) {
	c := proto.Clone(obj).(v1.Object)
	m := v1.Meta(c)
	delete(m.Annotations, v1.LastAppliedAnnotation)
	if len(m.Annotations) == 0 {
		m.Annotations = nil
	}
	m.Uid, m.ResourceVersion, m.Generation = "", 0, 0
	m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = nil, nil, 0
	if fd := v1.Field(c, "status"); fd != nil {
		c.ProtoReflect().Clear(fd)
	}
	if !record {
		return c, nil
	}
	j, err := manifest.Marshal(c, manifest.JSON)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, j); err != nil {
		return nil, err
	}
	setAnnotation(m, v1.LastAppliedAnnotation, b.String())
	return c, nil
}

func setAnnotation(m *v1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}
