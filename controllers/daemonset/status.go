package daemonset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) writeStatus(ctx context.Context, ds *v1.DaemonSet, nodes []*nodePods) error {
	now := c.now()
	mrs := ds.GetSpec().GetMinReadySeconds()
	st := &v1.DaemonSetStatus{ObservedGeneration: ds.GetMetadata().GetGeneration(), Conditions: ds.GetStatus().GetConditions()}
	if old := ds.GetStatus(); old != nil {
		st.CollisionCount = old.CollisionCount
	}
	for _, np := range nodes {
		var p *v1.Pod
		if np.newPod != nil {
			p = np.newPod
		} else {
			p = np.oldPod
		}
		if !np.run && !(np.stay && p != nil) {
			if p != nil {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if p == nil {
			continue
		}
		st.CurrentNumberScheduled++
		if np.newPod != nil {
			st.UpdatedNumberScheduled++
		}
		if controller.IsPodReady(p) {
			st.NumberReady++
		}
		if controller.IsPodAvailable(p, mrs, now) {
			st.NumberAvailable++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if proto.Equal(ds.GetStatus(), st) {
		return nil
	}
	next := proto.Clone(ds).(*v1.DaemonSet)
	next.Status = st
	_, err := c.dsAPI.UpdateStatus(ctx, next)
	return err
}

// templateHash names a template's revision (stable: deterministic
// protobuf encoding).
func templateHash(t *v1.PodTemplateSpec) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(t)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}

// currentRevision makes sure the DaemonSet's template has a
// ControllerRevision with the highest revision number and returns its hash.
func (c *Controller) currentRevision(ctx context.Context, ds *v1.DaemonSet) (string, error) {
	hash := templateHash(ds.GetSpec().GetTemplate())
	name := ds.GetMetadata().GetName() + "-" + hash
	revs := c.revs.ByIndex(controller.IndexControllerUID, ds.GetMetadata().GetUid())
	maxRev := int64(0)
	var mine *v1.ControllerRevision
	for _, r := range revs {
		maxRev = max(maxRev, r.GetRevision())
		if r.GetMetadata().GetName() == name {
			mine = r
		}
	}
	switch {
	case mine == nil:
		_, err := c.revAPI.Create(ctx, &v1.ControllerRevision{
			Metadata: &v1.ObjectMeta{Name: name, Namespace: ds.GetMetadata().GetNamespace(), Labels: map[string]string{HashLabel: hash},
				OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(ds, "apps/v1", "DaemonSet")}},
			Template: proto.Clone(ds.GetSpec().GetTemplate()).(*v1.PodTemplateSpec), Revision: maxRev + 1})
		if apierrors.IsAlreadyExists(err) {
			return hash, nil // the cache lags behind our own create
		}
		return hash, err
	case mine.GetRevision() < maxRev:
		// Rolled back to an earlier template: it becomes the newest revision.
		_, err := c.revAPI.Mutate(ctx, mine.GetMetadata().GetNamespace(), name, false, func(r *v1.ControllerRevision) error {
			r.Revision = maxRev + 1
			return nil
		})
		return hash, err
	}
	return hash, nil
}

// cleanupHistory deletes the oldest revisions beyond revisionHistoryLimit
// that no pod runs.
func (c *Controller) cleanupHistory(ctx context.Context, ds *v1.DaemonSet, pods []*v1.Pod, hash string) error {
	limit := int(ds.GetSpec().GetRevisionHistoryLimit())
	inUse := map[string]bool{hash: true}
	for _, p := range pods {
		inUse[p.GetMetadata().GetLabels()[HashLabel]] = true
	}
	var old []*v1.ControllerRevision
	for _, r := range c.revs.ByIndex(controller.IndexControllerUID, ds.GetMetadata().GetUid()) {
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
		_, err := c.revAPI.Delete(ctx, r.GetMetadata().GetNamespace(), r.GetMetadata().GetName(), client.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
