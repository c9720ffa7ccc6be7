package deployment

import (
	"fmt"
	"sort"
	"strconv"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// fenceposts returns maxSurge and maxUnavailable resolved against the
// desired replicas. If both round to zero, maxUnavailable becomes 1 so a
// rollout can always progress.
func fenceposts(d *v1.Deployment) (surge, unavailable int32, err error) {
	ru := d.GetSpec().GetStrategy().GetRollingUpdate()
	desired := replicas(d)
	if surge, err = controller.ScaledValue(ru.GetMaxSurge(), desired, true); err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxSurge: %w", err)
	}
	if unavailable, err = controller.ScaledValue(ru.GetMaxUnavailable(), desired, false); err != nil {
		return 0, 0, fmt.Errorf("spec.strategy.rollingUpdate.maxUnavailable: %w", err)
	}
	if surge == 0 && unavailable == 0 {
		unavailable = 1
	}
	return surge, unavailable, nil
}

func isRolling(d *v1.Deployment) bool { return d.GetSpec().GetStrategy().GetType() != "Recreate" }

// maxSurge is the resolved maxSurge (0 for Recreate).
func maxSurge(d *v1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, _, _ := fenceposts(d)
	return s
}

// maxUnavailable is the resolved maxUnavailable, at most replicas (0 for
// Recreate or zero replicas).
func maxUnavailable(d *v1.Deployment) int32 {
	if !isRolling(d) || replicas(d) == 0 {
		return 0
	}
	_, u, _ := fenceposts(d)
	return min(u, replicas(d))
}

func replicas(d *v1.Deployment) int32 { return d.GetSpec().GetReplicas() }

func rsReplicas(rs *v1.ReplicaSet) int32 { return rs.GetSpec().GetReplicas() }

// specCount sums spec.replicas.
func specCount(rss []*v1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rsReplicas(rs)
		}
	}
	return n
}

// podCount bounds the active pods of the ReplicaSets from above: the
// larger of spec.replicas (creates in flight) and status.replicas (pods
// not yet deleted after a scale-down). Kubernetes uses spec alone, which
// lets a new ReplicaSet scale up while an old one still has the pods it is
// about to delete; counting both keeps the pods within replicas+maxSurge.
func podCount(rss []*v1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += max(rsReplicas(rs), rs.GetStatus().GetReplicas())
		}
	}
	return n
}

// statusCount sums status.replicas.
func statusCount(rss []*v1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.GetStatus().GetReplicas()
		}
	}
	return n
}

func readyCount(rss []*v1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += rs.GetStatus().GetReadyReplicas()
		}
	}
	return n
}

// availableCount sums available replicas, each ReplicaSet's capped at its
// spec.replicas: after a scale-down its status may still count pods it is
// about to delete, and those must not justify scaling down further.
func availableCount(rss []*v1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += min(rs.GetStatus().GetAvailableReplicas(), rsReplicas(rs))
		}
	}
	return n
}

// active keeps the ReplicaSets with spec.replicas > 0.
func active(rss []*v1.ReplicaSet) []*v1.ReplicaSet {
	var out []*v1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && rsReplicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

func olderThan(a, b *v1.ReplicaSet) bool {
	ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return a.GetMetadata().GetName() < b.GetMetadata().GetName()
}

func sortOldestFirst(rss []*v1.ReplicaSet) {
	sort.SliceStable(rss, func(i, j int) bool { return olderThan(rss[i], rss[j]) })
}

// sortBySize orders larger first; among equal sizes newer first (newer
// true, for scaling up) or older first (for scaling down).
func sortBySize(rss []*v1.ReplicaSet, newer bool) {
	sort.SliceStable(rss, func(i, j int) bool {
		if a, b := rsReplicas(rss[i]), rsReplicas(rss[j]); a != b {
			return a > b
		}
		if newer {
			return olderThan(rss[j], rss[i])
		}
		return olderThan(rss[i], rss[j])
	})
}

// revision reads a ReplicaSet's revision annotation (0 if absent or bad).
func revision(o v1.Object) int64 {
	n, err := strconv.ParseInt(o.GetMetadata().GetAnnotations()[RevisionAnnotation], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func maxRevision(rss []*v1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		m = max(m, revision(rs))
	}
	return m
}

func intAnnotation(rs *v1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.GetMetadata().GetAnnotations()[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, false
	}
	return int32(n), true
}

// setReplicasAnnotations records the desired and max replicas a
// ReplicaSet was last scaled for (proportional scaling reads them).
func setReplicasAnnotations(rs *v1.ReplicaSet, desired, maxReplicas int32) bool {
	m := v1.Meta(rs)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	d, x := strconv.Itoa(int(desired)), strconv.Itoa(int(maxReplicas))
	changed := m.Annotations[DesiredReplicasAnnotation] != d || m.Annotations[MaxReplicasAnnotation] != x
	m.Annotations[DesiredReplicasAnnotation] = d
	m.Annotations[MaxReplicasAnnotation] = x
	return changed
}

func replicasAnnotationsNeedUpdate(rs *v1.ReplicaSet, desired, maxReplicas int32) bool {
	d, ok1 := intAnnotation(rs, DesiredReplicasAnnotation)
	x, ok2 := intAnnotation(rs, MaxReplicasAnnotation)
	return !ok1 || !ok2 || d != desired || x != maxReplicas
}
