package deploy

import (
	"context"
	"fmt"
	"slices"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// pruneKinds are the kinds apply --prune looks at: kubectl's default
// allow list, as far as Tugboat serves them. Objects a controller makes
// (pods of a replica set, replica sets of a deployment) are never pruned:
// they carry no last-applied annotation.
var pruneKinds = []string{
	"ConfigMap", "Endpoints", "Namespace", "PersistentVolumeClaim", "PersistentVolume", "Pod",
	"ReplicationController", "Secret", "Service", "Job", "CronJob", "Ingress", "DaemonSet",
	"Deployment", "ReplicaSet", "StatefulSet",
}

// selectManifests keeps the manifests' objects whose labels match sel.
func selectManifests(objs []manifest.Object, sel string) ([]manifest.Object, error) {
	s, err := labels.Parse(sel)
	if err != nil {
		return nil, fmt.Errorf("-l %q: %v", sel, err)
	}
	var out []manifest.Object
	for _, mo := range objs {
		if s.Matches(mo.Object.GetMetadata().GetLabels()) {
			out = append(out, mo)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-l %q: no object of the manifests has these labels", sel)
	}
	return out, nil
}

// prune deletes what an earlier apply made (the objects with the
// last-applied annotation) that match sel and that applied no longer
// holds: in the namespaces applied to, and cluster-scoped.
func prune(ctx context.Context, o *cli.Options, applied []manifest.Object, sel string, d cli.DryRun) error {
	keep := map[string]bool{}
	var namespaces []string
	for _, mo := range applied {
		m := mo.Object.GetMetadata()
		keep[mo.Kind.Name+"/"+m.GetNamespace()+"/"+m.GetName()] = true
		if mo.Kind.Namespaced && !slices.Contains(namespaces, m.GetNamespace()) {
			namespaces = append(namespaces, m.GetNamespace())
		}
	}
	if len(namespaces) == 0 {
		ns, err := o.Namespace()
		if err != nil {
			return err
		}
		namespaces = []string{ns}
	}
	for _, name := range pruneKinds {
		k, err := kinds.Lookup(name)
		if err != nil || k.Name != name {
			continue // a kind Tugboat does not serve
		}
		spaces := namespaces
		if !k.Namespaced {
			spaces = []string{""}
		}
		read, err := o.API(k)
		if err != nil {
			return err
		}
		write, err := o.WriteAPI(k, d)
		if err != nil {
			return err
		}
		for _, ns := range spaces {
			objs, _, err := read.List(ctx, client.ListOptions{Namespace: ns, LabelSelector: sel})
			if err != nil {
				return err
			}
			cli.SortObjects(objs)
			for _, obj := range objs {
				m := obj.GetMetadata()
				if keep[k.Name+"/"+m.GetNamespace()+"/"+m.GetName()] || m.GetAnnotations()[v1.LastAppliedAnnotation] == "" || m.GetDeletionTimestamp() != nil {
					continue
				}
				if d != cli.DryRunClient {
					_, err := write.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{ResourceVersion: m.GetResourceVersion()})
					if apierrors.IsNotFound(err) {
						continue
					}
					if err != nil {
						return fmt.Errorf("pruning %s: %w", printers.ObjectName(k, obj), err)
					}
				}
				fmt.Fprintf(o.Out, "%s pruned%s\n", printers.ObjectName(k, obj), d.Suffix())
			}
		}
	}
	return nil
}
