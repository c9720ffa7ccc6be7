package deployment

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// rolloutRolling does one step of a rolling update: scale the new
// ReplicaSet up within maxSurge, else scale old ones down within
// maxUnavailable, else clean up history once complete.
func (c *Controller) rolloutRolling(ctx context.Context, d *v1.Deployment, rss []*v1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, true)
	if err != nil {
		return err
	}
	all := append(append([]*v1.ReplicaSet(nil), old...), newRS)
	scaledUp, err := c.reconcileNew(ctx, d, all, newRS)
	if err != nil {
		return err
	}
	if scaledUp {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	scaledDown, err := c.reconcileOld(ctx, d, all, active(old), newRS)
	if err != nil {
		return err
	}
	if scaledDown {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	if complete(d, d.GetStatus()) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, all, newRS)
}

// newRSReplicas is the size the new ReplicaSet may grow to now.
func (c *Controller) newRSReplicas(d *v1.Deployment, all []*v1.ReplicaSet, newRS *v1.ReplicaSet) (int32, error) {
	if !isRolling(d) {
		return replicas(d), nil
	}
	surge, _, err := fenceposts(d)
	if err != nil {
		return 0, err
	}
	current := podCount(all)
	maxTotal := replicas(d) + surge
	if current >= maxTotal {
		return rsReplicas(newRS), nil
	}
	up := min(maxTotal-current, replicas(d)-rsReplicas(newRS))
	return rsReplicas(newRS) + max(up, 0), nil
}

func (c *Controller) reconcileNew(ctx context.Context, d *v1.Deployment, all []*v1.ReplicaSet, newRS *v1.ReplicaSet) (bool, error) {
	switch {
	case rsReplicas(newRS) == replicas(d):
		return false, nil
	case rsReplicas(newRS) > replicas(d):
		scaled, _, err := c.scaleRS(ctx, d, newRS, replicas(d), "down")
		return scaled, err
	}
	n, err := c.newRSReplicas(d, all, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := c.scaleRS(ctx, d, newRS, n, "up")
	return scaled, err
}

// reconcileOld scales old ReplicaSets down as far as availability allows:
// first their unavailable pods, then available ones while at least
// replicas-maxUnavailable pods stay available.
func (c *Controller) reconcileOld(ctx context.Context, d *v1.Deployment, all, old []*v1.ReplicaSet, newRS *v1.ReplicaSet) (bool, error) {
	if specCount(old) == 0 {
		return false, nil
	}
	minAvailable := replicas(d) - maxUnavailable(d)
	newUnavailable := rsReplicas(newRS) - min(newRS.GetStatus().GetAvailableReplicas(), rsReplicas(newRS))
	maxScaledDown := specCount(all) - minAvailable - newUnavailable
	if maxScaledDown <= 0 {
		return false, nil
	}
	old, cleaned, err := c.cleanupUnhealthy(ctx, d, old, maxScaledDown)
	if err != nil {
		return false, err
	}
	all = append(append([]*v1.ReplicaSet(nil), old...), newRS)
	scaled, err := c.scaleDownOld(ctx, d, all, old)
	if err != nil {
		return false, err
	}
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthy removes the unavailable replicas of old ReplicaSets,
// oldest first, up to maxCleanup: they count against availability anyway,
// and may be why the rollout is stuck.
func (c *Controller) cleanupUnhealthy(ctx context.Context, d *v1.Deployment, old []*v1.ReplicaSet, maxCleanup int32) ([]*v1.ReplicaSet, int32, error) {
	sorted := append([]*v1.ReplicaSet(nil), old...)
	sortOldestFirst(sorted)
	var total int32
	for i, rs := range sorted {
		if total >= maxCleanup {
			break
		}
		if rsReplicas(rs) == 0 {
			continue
		}
		healthy := min(rs.GetStatus().GetAvailableReplicas(), rsReplicas(rs))
		if healthy == rsReplicas(rs) {
			continue
		}
		n := min(maxCleanup-total, rsReplicas(rs)-healthy)
		_, out, err := c.scaleRS(ctx, d, rs, rsReplicas(rs)-n, "down")
		if err != nil {
			return nil, 0, err
		}
		total += n
		sorted[i] = out
	}
	return sorted, total, nil
}

// scaleDownOld scales old ReplicaSets down, oldest first, by as many
// replicas as are available beyond replicas-maxUnavailable.
func (c *Controller) scaleDownOld(ctx context.Context, d *v1.Deployment, all, old []*v1.ReplicaSet) (int32, error) {
	minAvailable := replicas(d) - maxUnavailable(d)
	available := availableCount(all)
	if available <= minAvailable {
		return 0, nil
	}
	budget := available - minAvailable
	sorted := append([]*v1.ReplicaSet(nil), old...)
	sortOldestFirst(sorted)
	var total int32
	for _, rs := range sorted {
		if total >= budget {
			break
		}
		if rsReplicas(rs) == 0 {
			continue
		}
		n := min(rsReplicas(rs), budget-total)
		if _, _, err := c.scaleRS(ctx, d, rs, rsReplicas(rs)-n, "down"); err != nil {
			return total, err
		}
		total += n
	}
	return total, nil
}
