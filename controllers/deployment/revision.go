package deployment

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// templateHash is the pod-template-hash of a template: FNV-32a of its
// deterministic protobuf encoding and the collision count, spelled with
// the consonant-and-digit alphabet Kubernetes uses so it never forms words.
func templateHash(t *v1.PodTemplateSpec, collisions int32) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	h := fnv.New32a()
	h.Write(b)
	if collisions != 0 {
		var c [4]byte
		binary.LittleEndian.PutUint32(c[:], uint32(collisions))
		h.Write(c[:])
	}
	return safeEncode(strconv.FormatUint(uint64(h.Sum32()), 10))
}

func safeEncode(s string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := []byte(s)
	for i, c := range out {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	return string(out)
}

// equalIgnoreHash compares two templates ignoring the pod-template-hash label.
// Templates are compared as Kubernetes' Go types see them
// (controller.CanonicalTemplate): kubectl rollout undo sends the
// ReplicaSet's template back with "resources":{}.
func equalIgnoreHash(a, b *v1.PodTemplateSpec) bool {
	a, b = proto.Clone(controller.CanonicalTemplate(a)).(*v1.PodTemplateSpec), proto.Clone(controller.CanonicalTemplate(b)).(*v1.PodTemplateSpec)
	for _, t := range []*v1.PodTemplateSpec{a, b} {
		if t.GetMetadata() != nil {
			delete(t.Metadata.Labels, PodTemplateHashLabel)
			if len(t.Metadata.Labels) == 0 {
				t.Metadata.Labels = nil
			}
		}
	}
	return proto.Equal(a, b)
}

// findNewRS returns the oldest ReplicaSet whose template is the
// Deployment's, or nil.
func findNewRS(d *v1.Deployment, rss []*v1.ReplicaSet) *v1.ReplicaSet {
	sorted := append([]*v1.ReplicaSet(nil), rss...)
	sortOldestFirst(sorted)
	for _, rs := range sorted {
		if equalIgnoreHash(rs.GetSpec().GetTemplate(), d.GetSpec().GetTemplate()) {
			return rs
		}
	}
	return nil
}

// skipCopy are Deployment annotations that are not copied to ReplicaSets.
var skipCopy = map[string]bool{
	RevisionAnnotation: true, RevisionHistoryAnnotation: true, DesiredReplicasAnnotation: true, MaxReplicasAnnotation: true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// setNewRSAnnotations copies the Deployment's annotations to the new
// ReplicaSet and gives it newRevision if that is higher than its own,
// keeping the old number in the revision history (a rollback).
func setNewRSAnnotations(d *v1.Deployment, rs *v1.ReplicaSet, newRevision int64, exists bool) bool {
	m := v1.Meta(rs)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range d.GetMetadata().GetAnnotations() {
		if !skipCopy[k] && m.Annotations[k] != v {
			m.Annotations[k] = v
			changed = true
		}
	}
	old, had := m.Annotations[RevisionAnnotation]
	oldN, _ := strconv.ParseInt(old, 10, 64)
	if oldN < newRevision {
		m.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had && old != "" {
			hist := m.Annotations[RevisionHistoryAnnotation]
			if hist == "" {
				hist = old
			} else {
				hist += "," + old
			}
			// Keep the history short: drop the oldest numbers beyond 2000 characters.
			for len(hist) > 2000 {
				_, hist, _ = strings.Cut(hist, ",")
			}
			m.Annotations[RevisionHistoryAnnotation] = hist
		}
	}
	if !exists && setReplicasAnnotations(rs, replicas(d), replicas(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

// setDeploymentRevision sets the Deployment's revision annotation.
func setDeploymentRevision(d *v1.Deployment, rev string) bool {
	m := v1.Meta(d)
	if m.Annotations[RevisionAnnotation] == rev {
		return false
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[RevisionAnnotation] = rev
	return true
}

// newAndOld splits the claimed ReplicaSets into the new one (creating it
// if create is set and it does not exist) and all the others, and brings
// revision annotations and minReadySeconds up to date. d is the sync's
// working copy; it is updated in place when the Deployment is written.
func (c *Controller) newAndOld(ctx context.Context, d *v1.Deployment, rss []*v1.ReplicaSet, create bool) (*v1.ReplicaSet, []*v1.ReplicaSet, error) {
	existing := findNewRS(d, rss)
	var old []*v1.ReplicaSet
	for _, rs := range rss {
		if existing == nil || rs.GetMetadata().GetUid() != existing.GetMetadata().GetUid() {
			old = append(old, rs)
		}
	}
	newRevision := maxRevision(old) + 1
	if existing != nil {
		rs := informer.Copy(existing)
		changed := setNewRSAnnotations(d, rs, newRevision, true)
		if rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			changed = true
		}
		if changed {
			out, err := c.rsAPI.Update(ctx, rs)
			return out, old, err
		}
		metaChanged := setDeploymentRevision(d, rs.Metadata.Annotations[RevisionAnnotation])
		statusChanged := false
		if hasDeadline(d) && controller.GetCondition(d.Status.GetConditions(), "Progressing") == nil {
			setCondition(d, newCondition("Progressing", controller.True, "FoundNewReplicaSet",
				fmt.Sprintf("Found new replica set %q", rs.Metadata.Name), c.now()))
			statusChanged = true
		}
		if err := c.writeDeployment(ctx, d, metaChanged, statusChanged); err != nil {
			return nil, nil, err
		}
		return rs, old, nil
	}
	if !create {
		return nil, old, nil
	}
	rs, err := c.createNewRS(ctx, d, old, newRevision)
	return rs, old, err
}

func (c *Controller) createNewRS(ctx context.Context, d *v1.Deployment, old []*v1.ReplicaSet, newRevision int64) (*v1.ReplicaSet, error) {
	hash := templateHash(d.Spec.Template, d.GetStatus().GetCollisionCount())
	tmpl := proto.Clone(d.Spec.Template).(*v1.PodTemplateSpec)
	tm := v1.Meta(tmpl)
	if tm.Labels == nil {
		tm.Labels = map[string]string{}
	}
	tm.Labels[PodTemplateHashLabel] = hash
	sel := proto.Clone(d.Spec.Selector).(*v1.LabelSelector)
	if sel.MatchLabels == nil {
		sel.MatchLabels = map[string]string{}
	}
	sel.MatchLabels[PodTemplateHashLabel] = hash
	name := d.Metadata.Name
	if len(name)+1+len(hash) > 253 {
		name = name[:253-1-len(hash)]
	}
	rs := &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{
			Name: name + "-" + hash, Namespace: d.Metadata.Namespace,
			Labels:          cloneMap(tm.Labels),
			OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(d, "apps/v1", "Deployment")},
		},
		Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(0), MinReadySeconds: d.Spec.MinReadySeconds, Selector: sel, Template: tmpl},
	}
	n, err := c.newRSReplicas(d, append(append([]*v1.ReplicaSet(nil), old...), rs), rs)
	if err != nil {
		return nil, err
	}
	rs.Spec.Replicas = proto.Int32(n)
	setNewRSAnnotations(d, rs, newRevision, false)
	created, err := c.rsAPI.Create(ctx, rs)
	alreadyExists := false
	switch {
	case apierrors.IsAlreadyExists(err):
		// Our cache may be behind our own earlier create; ask the apiserver.
		cur, getErr := c.rsAPI.Get(ctx, rs.Metadata.Namespace, rs.Metadata.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := controller.ControllerRef(cur.Metadata); ref != nil && ref.Uid == d.Metadata.Uid && equalIgnoreHash(cur.Spec.Template, d.Spec.Template) {
			created, err, alreadyExists = cur, nil, true
			break
		}
		// A different template hashed to the same name: try the next hash.
		d.Status = proto.Clone(d.GetStatus()).(*v1.DeploymentStatus)
		if d.Status == nil {
			d.Status = &v1.DeploymentStatus{}
		}
		d.Status.CollisionCount++
		if werr := c.writeDeployment(ctx, d, false, true); werr != nil {
			return nil, werr
		}
		return nil, fmt.Errorf("replica set name %s collides with another template; collision count now %d", rs.Metadata.Name, d.Status.CollisionCount)
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Metadata.Name, err)
		if hasDeadline(d) {
			setCondition(d, newCondition("Progressing", controller.False, "ReplicaSetCreateError", msg, c.now()))
			_ = c.writeDeployment(ctx, d, false, true)
		}
		c.events.Eventf(d, controller.Warning, "FailedCreate", "%s", msg)
		return nil, err
	}
	if !alreadyExists && n > 0 {
		c.events.Eventf(d, controller.Normal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Metadata.Name, n)
	}
	metaChanged := setDeploymentRevision(d, strconv.FormatInt(newRevision, 10))
	statusChanged := false
	if !alreadyExists && hasDeadline(d) {
		setCondition(d, newCondition("Progressing", controller.True, "NewReplicaSetCreated",
			fmt.Sprintf("Created new replica set %q", created.Metadata.Name), c.now()))
		statusChanged = true
	}
	if err := c.writeDeployment(ctx, d, metaChanged, statusChanged); err != nil {
		return nil, err
	}
	return created, nil
}

// writeDeployment stores the working copy: metadata (the revision
// annotation) through Update, status through UpdateStatus, each
// compare-and-swap; d takes the stored resource_version.
func (c *Controller) writeDeployment(ctx context.Context, d *v1.Deployment, meta, status bool) error {
	if meta {
		out, err := c.dAPI.Update(ctx, d)
		if err != nil {
			return err
		}
		d.Metadata = out.Metadata
	}
	if status {
		out, err := c.dAPI.UpdateStatus(ctx, d)
		if err != nil {
			return err
		}
		d.Metadata = out.Metadata
	}
	return nil
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
