package tugctl

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

// Annotations and labels shared with the deployment controller.
const (
	RevisionAnnotation    = "deployment.kubernetes.io/revision"
	ChangeCauseAnnotation = "kubernetes.io/change-cause"
	RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"
	PodTemplateHashLabel  = "pod-template-hash"
)

// skippedOnRollback says which replica set annotations are not copied to
// the deployment on rollback (as in kubectl).
func skippedOnRollback(key string) bool {
	switch key {
	case LastAppliedAnnotation, RevisionAnnotation,
		"deployment.kubernetes.io/revision-history",
		"deployment.kubernetes.io/desired-replicas",
		"deployment.kubernetes.io/max-replicas":
		return true
	}
	return false
}

// controlledReplicaSets are the replica sets a deployment controls: those
// its selector matches whose controller owner reference is the deployment,
// ordered by revision.
func controlledReplicaSets(ctx context.Context, c *client.Client, d *v1.Deployment) ([]*v1.ReplicaSet, error) {
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
		if ownedBy(rs.GetMetadata(), d.GetMetadata().GetUid()) {
			out = append(out, rs)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return revisionOf(out[i]) < revisionOf(out[j]) })
	return out, nil
}

// ownedBy reports whether uid is the controller owner of m.
func ownedBy(m *v1.ObjectMeta, uid string) bool {
	for _, r := range m.GetOwnerReferences() {
		if r.Controller && r.Uid == uid {
			return true
		}
	}
	return false
}

// revisionOf is an object's revision annotation, 0 when missing or bad.
func revisionOf(obj v1.Object) int64 {
	n, err := strconv.ParseInt(obj.GetMetadata().GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// templateWithoutHash is a replica set's template with the
// pod-template-hash label the controller added removed: the deployment
// template it was made from.
func templateWithoutHash(t *v1.PodTemplateSpec) *v1.PodTemplateSpec {
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

// findNewReplicaSet is the replica set whose template is the deployment's,
// the newest if several are.
func findNewReplicaSet(d *v1.Deployment, rss []*v1.ReplicaSet) *v1.ReplicaSet {
	var found *v1.ReplicaSet
	for _, rs := range rss {
		if proto.Equal(templateWithoutHash(rs.GetSpec().GetTemplate()), templateWithoutHash(d.GetSpec().GetTemplate())) {
			found = rs // rss is in revision order: the last match is the newest
		}
	}
	return found
}
