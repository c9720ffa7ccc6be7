package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// TemplateHash names a template's revision (stable: deterministic
// protobuf encoding).
func TemplateHash(t *v1.PodTemplateSpec) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

// History keeps the ControllerRevisions of an owner's pod templates
// (DaemonSets, StatefulSets): <owner>-<hash>, labelled as the template
// and with HashLabel, their data the patch that puts the template back
// into the owner, as Kubernetes' controllers write it
// (manifest.RevisionData). The hash is of the template, so a revision
// stored before data existed keeps its name.
type History struct {
	API    *client.Typed[*v1.ControllerRevision]
	Source Source[*v1.ControllerRevision] // with IndexControllerUID
	Kind   string                         // the owners' kind, "DaemonSet"
}

// HashLabel names the revision of a pod's template.
const HashLabel = "controller-revision-hash"

// Current makes sure template has a ControllerRevision with the highest
// revision number of owner's and returns its hash (a template seen before
// gets its old revision back, renumbered: a rollback). A new revision
// carries the owner's annotations (kubernetes.io/change-cause is rollout
// history's CHANGE-CAUSE), as Kubernetes' controllers copy them.
//
// The hash is of the canonical template (CanonicalTemplate), so a template
// that kubectl rollout undo sent back through Kubernetes' Go types finds
// its revision; a revision named by the hash of the template as stored
// (before canonical hashing, when the two differ) keeps being used, so
// that no pod is replaced for an upgrade.
func (h History) Current(ctx context.Context, owner v1.Object, template *v1.PodTemplateSpec) (string, error) {
	hash := TemplateHash(CanonicalTemplate(template))
	prefix := owner.GetMetadata().GetName() + "-"
	legacy := TemplateHash(template)
	revs := h.Source.ByIndex(IndexControllerUID, owner.GetMetadata().GetUid())
	maxRev := int64(0)
	var mine *v1.ControllerRevision
	for _, r := range revs {
		maxRev = max(maxRev, r.GetRevision())
		switch r.GetMetadata().GetName() {
		case prefix + hash:
			if mine == nil {
				mine = r
			}
		case prefix + legacy:
			mine = r
		}
	}
	if mine != nil {
		hash = mine.GetMetadata().GetName()[len(prefix):]
	}
	name := prefix + hash
	switch {
	case mine == nil:
		data, err := manifest.RevisionData(template)
		if err != nil {
			return "", Permanent(err)
		}
		_, err = h.API.Create(ctx, &v1.ControllerRevision{
			Metadata: &v1.ObjectMeta{Name: name, Namespace: owner.GetMetadata().GetNamespace(), Labels: revisionLabels(template, hash),
				Annotations:     revisionAnnotations(owner),
				OwnerReferences: []*v1.OwnerReference{NewControllerRef(owner, "apps/v1", h.Kind)}},
			Data: data, Revision: maxRev + 1})
		if apierrors.IsAlreadyExists(err) {
			return hash, nil // the cache lags behind our own create
		}
		return hash, err
	case mine.GetRevision() < maxRev:
		// Rolled back to an earlier template: it becomes the newest revision.
		_, err := h.API.Mutate(ctx, mine.GetMetadata().GetNamespace(), name, false, func(r *v1.ControllerRevision) error {
			r.Revision = maxRev + 1
			return nil
		})
		return hash, err
	}
	return hash, nil
}

// Cleanup deletes the oldest revisions beyond limit that no pod runs
// (hash, the current one, is kept).
func (h History) Cleanup(ctx context.Context, owner v1.Object, limit int, pods []*v1.Pod, hash string) error {
	inUse := map[string]bool{hash: true}
	for _, p := range pods {
		inUse[p.GetMetadata().GetLabels()[HashLabel]] = true
	}
	var old []*v1.ControllerRevision
	for _, r := range h.Source.ByIndex(IndexControllerUID, owner.GetMetadata().GetUid()) {
		if !inUse[r.GetMetadata().GetLabels()[HashLabel]] {
			old = append(old, r)
		}
	}
	if len(old) <= limit {
		return nil
	}
	sort.Slice(old, func(i, j int) bool { return old[i].GetRevision() < old[j].GetRevision() })
	var errs []error
	for _, r := range old[:len(old)-limit] {
		_, err := h.API.Delete(ctx, r.GetMetadata().GetNamespace(), r.GetMetadata().GetName(), client.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// revisionLabels are the template's labels and HashLabel: the owner's
// selector matches its revisions (kubectl finds them so).
func revisionLabels(template *v1.PodTemplateSpec, hash string) map[string]string {
	out := map[string]string{HashLabel: hash}
	for k, v := range template.GetMetadata().GetLabels() {
		if k != HashLabel {
			out[k] = v
		}
	}
	return out
}

// revisionAnnotations are the owner's annotations but the last applied
// configuration (which holds the whole object).
func revisionAnnotations(owner v1.Object) map[string]string {
	var out map[string]string
	for k, v := range owner.GetMetadata().GetAnnotations() {
		if k == v1.LastAppliedAnnotation {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}
