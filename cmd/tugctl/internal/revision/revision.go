// Package revision reads a Deployment's revisions as kubectl does: its
// ReplicaSets (those it controls, in revision order, from the
// deployment.kubernetes.io/revision annotation the deployment controller
// sets), which of them runs the current template, and a ReplicaSet's
// template without the pod-template-hash label. `describe deployment`
// and the rollout commands share it; it only reads.
package revision

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Shared with the deployment controller (controllers/deployment).
const (
	// Annotation is a Deployment's or ReplicaSet's revision number.
	Annotation = "deployment.kubernetes.io/revision"
	// PodTemplateHashLabel is the label the controller adds to a
	// ReplicaSet's template (and selector) to tell revisions apart.
	PodTemplateHashLabel = "pod-template-hash"
)

// ReplicaSets are the replica sets a deployment controls: those
// its selector matches whose controller owner reference is the deployment,
// ordered by revision.
func ReplicaSets(ctx context.Context, c *client.Client, d *v1.Deployment) ([]*v1.ReplicaSet, error) {
	sel, err := labels.FromLabelSelector(d.GetSpec().GetSelector())
	if err != nil {
		return nil, fmt.Errorf("deployment %s: spec.selector: %w", d.GetMetadata().GetName(), err)
	}
	all, _, err := client.For[*v1.ReplicaSet](c).List(ctx, client.ListOptions{Namespace: d.GetMetadata().GetNamespace(), LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	var out []*v1.ReplicaSet
	for _, rs := range all {
		if OwnedBy(rs.GetMetadata(), d.GetMetadata().GetUid()) {
			out = append(out, rs)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return Of(out[i]) < Of(out[j]) })
	return out, nil
}

// OwnedBy reports whether uid is the controller owner of m.
func OwnedBy(m *v1.ObjectMeta, uid string) bool {
	for _, r := range m.GetOwnerReferences() {
		if r.Controller && r.Uid == uid {
			return true
		}
	}
	return false
}

// Of is an object's revision annotation, 0 when missing or bad.
func Of(obj v1.Object) int64 {
	n, err := strconv.ParseInt(obj.GetMetadata().GetAnnotations()[Annotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// TemplateWithoutHash is a replica set's template with the
// pod-template-hash label the controller added removed: the deployment
// template it was made from.
func TemplateWithoutHash(t *v1.PodTemplateSpec) *v1.PodTemplateSpec {
	out := proto.Clone(t).(*v1.PodTemplateSpec)
	if out == nil {
		return nil
	}
	if m := out.GetMetadata(); m != nil {
		delete(m.Labels, PodTemplateHashLabel)
		if len(m.Labels) == 0 {
			m.Labels = nil
		}
	}
	return out
}

// FindNew is the replica set whose template is the deployment's,
// the newest if several are.
func FindNew(d *v1.Deployment, rss []*v1.ReplicaSet) *v1.ReplicaSet {
	var found *v1.ReplicaSet
	for _, rs := range rss {
		if proto.Equal(TemplateWithoutHash(rs.GetSpec().GetTemplate()), TemplateWithoutHash(d.GetSpec().GetTemplate())) {
			found = rs // rss is in revision order: the last match is the newest
		}
	}
	return found
}
