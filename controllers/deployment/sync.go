package deployment

import (
	"context"
	"fmt"
	"sort"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// sync converges one Deployment.
func (c *Controller) sync(ctx context.Context, key string) error {
	cached, ok := c.deps.Get(key)
	if !ok {
		return nil
	}
	d := informer.Copy(cached) // the sync's working copy
	if d.Spec == nil {
		return controller.Permanent(fmt.Errorf("deployment %s: spec is missing", key))
	}
	sel, err := labels.FromLabelSelector(d.Spec.Selector)
	if err != nil || sel.Empty() {
		return controller.Permanent(fmt.Errorf("deployment %s: spec.selector: unusable (%v)", key, err))
	}
	if _, _, err := fenceposts(d); err != nil {
		return controller.Permanent(fmt.Errorf("deployment %s: %w", key, err))
	}
	rss, err := c.claim(ctx, d, sel)
	if err != nil {
		return err
	}
	if d.Metadata.DeletionTimestamp != nil {
		newRS, old, err := c.newAndOld(ctx, d, rss, false)
		if err != nil {
			return err
		}
		return c.syncStatus(ctx, d, append(old, newRS), newRS)
	}
	if err := c.checkPaused(ctx, d); err != nil {
		return err
	}
	if d.Spec.Paused {
		return c.scaleOnly(ctx, d, rss)
	}
	scaling, err := c.isScalingEvent(ctx, d, rss)
	if err != nil {
		return err
	}
	if scaling {
		return c.scaleOnly(ctx, d, rss)
	}
	if d.Spec.GetStrategy().GetType() == "Recreate" {
		return c.rolloutRecreate(ctx, d, rss)
	}
	return c.rolloutRolling(ctx, d, rss)
}

// claim returns the ReplicaSets the Deployment controls, adopting and
// releasing by selector.
func (c *Controller) claim(ctx context.Context, d *v1.Deployment, sel labels.Selector) ([]*v1.ReplicaSet, error) {
	candidates := c.rss.ByIndex(controller.IndexControllerUID, d.Metadata.Uid)
	candidates = append(candidates, c.rss.ByIndex(controller.IndexOrphanNamespace, d.Metadata.Namespace)...)
	cl := &controller.Claimer[*v1.ReplicaSet]{
		API: c.rsAPI, Owner: d, APIVersion: "apps/v1", Kind: "Deployment", Selector: sel,
		CanAdopt: controller.RecheckOwner(c.dAPI, d),
	}
	return cl.Claim(ctx, candidates)
}

// isScalingEvent reports whether replicas changed since the active
// ReplicaSets were last scaled (their desired-replicas annotation).
func (c *Controller) isScalingEvent(ctx context.Context, d *v1.Deployment, rss []*v1.ReplicaSet) (bool, error) {
	newRS, old, err := c.newAndOld(ctx, d, rss, false)
	if err != nil {
		return false, err
	}
	for _, rs := range active(append(old, newRS)) {
		if desired, ok := intAnnotation(rs, DesiredReplicasAnnotation); ok && desired != replicas(d) {
			return true, nil
		}
	}
	return false, nil
}

// scaleOnly applies a change of replicas without rolling out (paused, or
// scaled mid-rollout), then writes status.
func (c *Controller) scaleOnly(ctx context.Context, d *v1.Deployment, rss []*v1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if d.Spec.Paused {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, d, append(old, newRS), newRS)
}

// scale brings the ReplicaSets to the Deployment's size: all of it on the
// only active one, or spread in proportion to their sizes during a rollout
// (Kubernetes' proportional scaling).
func (c *Controller) scale(ctx context.Context, d *v1.Deployment, newRS *v1.ReplicaSet, old []*v1.ReplicaSet) error {
	if rs := activeOrLatest(newRS, old); rs != nil {
		if rsReplicas(rs) == replicas(d) {
			return nil
		}
		_, _, err := c.scaleRS(ctx, d, rs, replicas(d), "")
		return err
	}
	if saturated(d, newRS) {
		for _, rs := range active(old) {
			if _, _, err := c.scaleRS(ctx, d, rs, 0, "down"); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRolling(d) {
		return nil
	}
	all := active(append(append([]*v1.ReplicaSet(nil), old...), newRS))
	var allowed int32
	if replicas(d) > 0 {
		allowed = replicas(d) + maxSurge(d)
	}
	toAdd := allowed - specCount(all)
	op := ""
	switch {
	case toAdd > 0:
		sortBySize(all, true)
		op = "up"
	case toAdd < 0:
		sortBySize(all, false)
		op = "down"
	}
	sizes := make([]int32, len(all))
	var added int32
	for i, rs := range all {
		sizes[i] = rsReplicas(rs)
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			sizes[i] += p
			added += p
		}
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			sizes[i] = max(sizes[i]+toAdd-added, 0) // leftovers to the largest
		}
		if _, _, err := c.scaleRS(ctx, d, rs, sizes[i], op); err != nil {
			return err
		}
	}
	return nil
}

// proportion is how many replicas rs gains (or loses) of toAdd, in
// proportion to its share of the size it was last scaled for.
func proportion(rs *v1.ReplicaSet, d *v1.Deployment, toAdd, added int32) int32 {
	if rs == nil || rsReplicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	var fraction int32
	if replicas(d) == 0 {
		fraction = -rsReplicas(rs)
	} else {
		target := replicas(d) + maxSurge(d)
		annotated, ok := intAnnotation(rs, MaxReplicasAnnotation)
		if !ok || annotated == 0 {
			annotated = d.GetStatus().GetReplicas()
		}
		if annotated == 0 {
			annotated = target
		}
		size := float64(rsReplicas(rs)) * float64(target) / float64(annotated)
		fraction = int32(size+0.5) - rsReplicas(rs)
	}
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

// activeOrLatest returns the only active ReplicaSet, the newest one if none
// is active, or nil if several are.
func activeOrLatest(newRS *v1.ReplicaSet, old []*v1.ReplicaSet) *v1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	sorted := append([]*v1.ReplicaSet(nil), old...)
	sort.SliceStable(sorted, func(i, j int) bool { return olderThan(sorted[j], sorted[i]) })
	act := active(append(sorted, newRS))
	switch len(act) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return sorted[0]
	case 1:
		return act[0]
	}
	return nil
}

// saturated reports whether the new ReplicaSet runs the whole Deployment.
func saturated(d *v1.Deployment, rs *v1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	desired, ok := intAnnotation(rs, DesiredReplicasAnnotation)
	return ok && desired == replicas(d) && rsReplicas(rs) == replicas(d) && rs.GetStatus().GetAvailableReplicas() == replicas(d)
}

// scaleRS sets a ReplicaSet's replicas (and its replicas annotations),
// compare-and-swap on the cached version, recording ScalingReplicaSet.
func (c *Controller) scaleRS(ctx context.Context, d *v1.Deployment, rs *v1.ReplicaSet, n int32, op string) (bool, *v1.ReplicaSet, error) {
	sizeChange := rsReplicas(rs) != n
	desired, maxR := replicas(d), replicas(d)+maxSurge(d)
	if !sizeChange && !replicasAnnotationsNeedUpdate(rs, desired, maxR) {
		return false, rs, nil
	}
	next := informer.Copy(rs)
	from := rsReplicas(rs)
	next.Spec.Replicas = &n
	setReplicasAnnotations(next, desired, maxR)
	out, err := c.rsAPI.Update(ctx, next)
	if err != nil {
		return false, nil, err
	}
	if sizeChange {
		if op == "" {
			op = "up"
			if n < from {
				op = "down"
			}
		}
		c.events.Eventf(d, controller.Normal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", op, rs.Metadata.Name, from, n)
	}
	return sizeChange, out, nil
}

// cleanup deletes the oldest scaled-down ReplicaSets beyond
// revisionHistoryLimit.
func (c *Controller) cleanup(ctx context.Context, d *v1.Deployment, old []*v1.ReplicaSet) error {
	limit := d.Spec.RevisionHistoryLimit
	if limit == nil {
		return nil
	}
	var cleanable []*v1.ReplicaSet
	for _, rs := range old {
		if rs.GetMetadata().GetDeletionTimestamp() == nil {
			cleanable = append(cleanable, rs)
		}
	}
	diff := len(cleanable) - int(*limit)
	if diff <= 0 {
		return nil
	}
	sort.SliceStable(cleanable, func(i, j int) bool {
		if a, b := revision(cleanable[i]), revision(cleanable[j]); a != b {
			return a < b
		}
		return olderThan(cleanable[i], cleanable[j])
	})
	for _, rs := range cleanable[:diff] {
		m := rs.GetMetadata()
		if rs.GetStatus().GetReplicas() != 0 || rsReplicas(rs) != 0 || m.GetGeneration() > rs.GetStatus().GetObservedGeneration() {
			continue
		}
		c.log.Info("deleting old replica set beyond revisionHistoryLimit", "deployment", v1.Key(d), "replicaset", m.GetName(), "revision", revision(rs))
		_, err := c.rsAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{ResourceVersion: m.GetResourceVersion()})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}
