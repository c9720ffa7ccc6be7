package deployment

import (
	"context"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// rolloutRecreate scales every old ReplicaSet to zero, waits until none of
// their pods is left, then creates and scales up the new one.
func (c *Controller) rolloutRecreate(ctx context.Context, d *v1.Deployment, rss []*v1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, false)
	if err != nil {
		return err
	}
	all := append(append([]*v1.ReplicaSet(nil), old...), newRS)
	scaledDown := false
	for _, rs := range active(old) {
		scaled, _, err := c.scaleRS(ctx, d, rs, 0, "down")
		if err != nil {
			return err
		}
		scaledDown = scaledDown || scaled
	}
	if scaledDown || c.oldPodsRunning(newRS, old) {
		return c.syncRolloutStatus(ctx, d, all, newRS)
	}
	if newRS == nil {
		if newRS, old, err = c.newAndOld(ctx, d, rss, true); err != nil {
			return err
		}
		all = append(append([]*v1.ReplicaSet(nil), old...), newRS)
	}
	if _, _, err := c.scaleRS(ctx, d, newRS, replicas(d), "up"); err != nil {
		return err
	}
	if complete(d, d.GetStatus()) {
		if err := c.cleanup(ctx, d, old); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, d, all, newRS)
}

// oldPodsRunning reports whether any pod of an old ReplicaSet still exists
// and has not finished (terminating pods still run).
func (c *Controller) oldPodsRunning(newRS *v1.ReplicaSet, old []*v1.ReplicaSet) bool {
	if statusCount(old) > 0 {
		return true
	}
	for _, rs := range old {
		if newRS != nil && rs.GetMetadata().GetUid() == newRS.GetMetadata().GetUid() {
			continue
		}
		for _, p := range c.pods.ByIndex(controller.IndexControllerUID, rs.GetMetadata().GetUid()) {
			if ph := p.GetStatus().GetPhase(); ph != "Succeeded" && ph != "Failed" {
				return true
			}
		}
	}
	return false
}
