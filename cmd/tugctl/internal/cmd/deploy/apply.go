package deploy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

func newApplyCommand(o *cli.Options) *cobra.Command {
	f := &cli.FileFlags{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create objects from manifests, or update them to match",
		Long: `Create each object of the manifests, or update it if it exists.

An update replaces the object's spec (or data) with the manifest's, keeping
what the cluster assigned (a pod's node, a service's cluster IP and node
ports), and sets the manifest's labels and annotations, removing those a
previous apply set that the manifest no longer has. Each update is a
compare-and-swap on the version read, so a concurrent change is never
overwritten. Prints created, configured or unchanged for each object.`,
		Example: `  tugctl apply -f nginx.yaml
  tugctl apply -f manifests/ -R
  cat pod.json | tugctl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runApply(cmd.Context(), o, f)
		},
	}
	f.Register(cmd, "to apply")
	return cmd
}

func runApply(ctx context.Context, o *cli.Options, f *cli.FileFlags) error {
	objs, err := o.ReadManifests(f.Files, f.Recursive)
	if err != nil {
		return err
	}
	for _, mo := range objs {
		if mo.Object.GetMetadata().GetName() == "" {
			return fmt.Errorf("%s (%s): metadata.name: required (apply finds objects by name; create accepts metadata.generateName)", mo.Source, mo.Kind.Name)
		}
		if err := o.PlaceObject(mo); err != nil {
			return err
		}
	}
	failed := false
	for _, mo := range objs {
		result, err := applyOne(ctx, o, mo)
		if errors.Is(err, apierrors.ErrUnavailable) {
			return err // the server is unreachable: the rest would fail the same way
		}
		if err != nil {
			fmt.Fprintf(o.ErrOut, "error: %s (%s %s): %v\n", mo.Source, mo.Kind.Name, mo.Object.GetMetadata().GetName(), err)
			failed = true
			continue
		}
		fmt.Fprintf(o.Out, "%s %s\n", printers.ObjectName(mo.Kind, mo.Object), result)
	}
	if failed {
		return cli.ErrReported
	}
	return nil
}

// applyOne creates or updates one object and says which it did.
func applyOne(ctx context.Context, o *cli.Options, mo manifest.Object) (string, error) {
	api, err := o.API(mo.Kind)
	if err != nil {
		return "", err
	}
	want := proto.Clone(mo.Object).(v1.Object)
	lastApplied, err := lastAppliedJSON(want)
	if err != nil {
		return "", err
	}
	wm := v1.Meta(want)
	for attempt := 0; ; attempt++ {
		cur, err := api.Get(ctx, wm.Namespace, wm.Name)
		if apierrors.IsNotFound(err) {
			obj := proto.Clone(want).(v1.Object)
			setAnnotation(v1.Meta(obj), v1.LastAppliedAnnotation, lastApplied)
			_, err = api.Create(ctx, obj)
			if apierrors.IsAlreadyExists(err) && attempt < 5 {
				continue // created meanwhile: update it instead
			}
			if err != nil {
				return "", err
			}
			return "created", nil
		}
		if err != nil {
			return "", err
		}
		next := mergeApply(mo.Kind.Name, cur, want, lastApplied)
		mo.Kind.Default(next)
		if proto.Equal(next, cur) {
			return "unchanged", nil
		}
		out, err := api.Update(ctx, next)
		if apierrors.IsConflict(err) && attempt < 5 {
			continue // changed since we read it: merge again
		}
		if err != nil {
			return "", err
		}
		if out.GetMetadata().GetResourceVersion() == cur.GetMetadata().GetResourceVersion() {
			return "unchanged", nil
		}
		return "configured", nil
	}
}

// mergeApply builds the update from the stored object and the manifest:
// every top-level field but metadata and status from the manifest, labels
// and annotations merged (see v1.LastAppliedAnnotation), everything else of
// the metadata (resource version for the compare-and-swap, owners,
// finalizers) as stored.
func mergeApply(kind string, cur, want v1.Object, lastApplied string) v1.Object {
	next := proto.Clone(cur).(v1.Object)
	nm, wm := v1.Meta(next), want.GetMetadata()
	prevLabels, prevAnnotations := previousApplied(cur)
	nm.Labels = mergeMap(nm.Labels, wm.GetLabels(), prevLabels)
	nm.Annotations = mergeMap(nm.Annotations, wm.GetAnnotations(), prevAnnotations)
	setAnnotation(nm, v1.LastAppliedAnnotation, lastApplied)
	nr, wr := next.ProtoReflect(), want.ProtoReflect()
	fields := nr.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.Name() == "metadata" || fd.Name() == "status" {
			continue
		}
		if wr.Has(fd) {
			nr.Set(fd, wr.Get(fd))
		} else {
			nr.Clear(fd)
		}
	}
	next = proto.Clone(next).(v1.Object) // detach from want's values
	keepAssigned(kind, cur, next)
	return next
}

// mergeMap sets want's entries over cur's and deletes the keys a previous
// apply set that want no longer has.
func mergeMap(cur, want, prev map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range cur {
		if _, was := prev[k]; was {
			if _, still := want[k]; !still {
				continue
			}
		}
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	delete(out, v1.LastAppliedAnnotation)
	if len(out) == 0 {
		return nil
	}
	return out
}

// previousApplied reads the labels and annotations of the last-applied
// manifest stored on obj.
func previousApplied(obj v1.Object) (labels, annotations map[string]string) {
	s := obj.GetMetadata().GetAnnotations()[v1.LastAppliedAnnotation]
	if s == "" {
		return nil, nil
	}
	var last struct {
		Metadata struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(s), &last) != nil {
		return nil, nil
	}
	return last.Metadata.Labels, last.Metadata.Annotations
}

// lastAppliedJSON is the manifest as one line of Kubernetes-shaped JSON.
func lastAppliedJSON(obj v1.Object) (string, error) {
	c := proto.Clone(obj).(v1.Object)
	m := v1.Meta(c)
	delete(m.Annotations, v1.LastAppliedAnnotation)
	// What the server owns is not part of what the user applies (input
	// saved with get -o yaml has it).
	m.Uid, m.ResourceVersion, m.Generation = "", 0, 0
	m.CreationTimestamp, m.DeletionTimestamp, m.DeletionGracePeriodSeconds = nil, nil, 0
	if fd := v1.Field(c, "status"); fd != nil {
		c.ProtoReflect().Clear(fd)
	}
	j, err := manifest.Marshal(c, manifest.JSON)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, j); err != nil {
		return "", err
	}
	return b.String(), nil
}

func setAnnotation(m *v1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

// keepAssigned keeps, per kind, the spec fields the cluster assigns when
// the manifest leaves them empty, so re-applying a manifest neither unbinds
// a pod nor changes a service's addresses.
func keepAssigned(kind string, cur, next v1.Object) {
	switch kind {
	case "Pod":
		c, n := cur.(*v1.Pod), next.(*v1.Pod)
		if n.Spec != nil && n.Spec.NodeName == "" {
			n.Spec.NodeName = c.GetSpec().GetNodeName()
		}
	case "Service":
		c, n := cur.(*v1.Service).GetSpec(), next.(*v1.Service).Spec
		if n == nil || c == nil {
			return
		}
		if n.ClusterIp == "" {
			n.ClusterIp, n.ClusterIps = c.ClusterIp, c.ClusterIps
		}
		if n.Type != "NodePort" {
			return // node ports go with the type
		}
		for _, np := range n.Ports {
			for _, cp := range c.Ports {
				if np.NodePort == 0 && np.Port == cp.Port && cmp.Or(np.Protocol, "TCP") == cmp.Or(cp.Protocol, "TCP") {
					np.NodePort = cp.NodePort
				}
			}
		}
	case "Node":
		c, n := cur.(*v1.Node).GetSpec(), next.(*v1.Node).Spec
		if n == nil || c == nil {
			return
		}
		if n.PodCidr == "" {
			n.PodCidr, n.PodCidrs = c.PodCidr, c.PodCidrs
		}
		if n.ProviderId == "" {
			n.ProviderId = c.ProviderId
		}
	}
}
