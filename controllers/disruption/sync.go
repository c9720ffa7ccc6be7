package disruption

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	pdb, ok := c.pdbs.Get(key)
	if !ok {
		return nil
	}
	now := c.now()
	st, _ := proto.Clone(pdb.GetStatus()).(*v1.PodDisruptionBudgetStatus)
	if st == nil {
		st = &v1.PodDisruptionBudgetStatus{}
	}
	var pods []*v1.Pod
	if sel, ok := selector(pdb); ok {
		for _, p := range c.pods.ByIndex(controller.IndexNamespace, pdb.GetMetadata().GetNamespace()) {
			if sel.Matches(p.GetMetadata().GetLabels()) {
				pods = append(pods, p)
			}
		}
	}
	if len(pods) == 0 {
		c.events.Eventf(pdb, controller.Normal, "NoPods", "No matching pods found")
	}
	// Evictions recorded by the apiserver: still disrupted until the pod
	// is gone (or being deleted), or the timeout passed.
	present := map[string]*v1.Pod{}
	for _, p := range pods {
		present[p.GetMetadata().GetName()] = p
	}
	var recheck time.Duration
	for name, at := range st.DisruptedPods {
		p, ok := present[name]
		expiry := at.AsTime().Add(c.cfg.DeletionTimeout)
		if !ok || p.GetMetadata().GetDeletionTimestamp() != nil || !now.Before(expiry) {
			delete(st.DisruptedPods, name)
			continue
		}
		if d := expiry.Sub(now); recheck == 0 || d < recheck {
			recheck = d
		}
	}
	healthy := int32(0)
	for _, p := range pods {
		if p.GetMetadata().GetDeletionTimestamp() == nil && controller.IsPodReady(p) && st.DisruptedPods[p.GetMetadata().GetName()] == nil {
			healthy++
		}
	}
	expected, desired, err := c.desired(pdb, pods)
	st.ObservedGeneration = pdb.GetMetadata().GetGeneration()
	st.CurrentHealthy = healthy
	if err != nil {
		c.events.Eventf(pdb, controller.Warning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		st.DisruptionsAllowed, st.ExpectedPods, st.DesiredHealthy = 0, int32(len(pods)), 0
		controller.SetCondition(&st.Conditions, &v1.Condition{Type: "DisruptionAllowed", Status: controller.False, Reason: "SyncFailed", Message: err.Error()}, now)
	} else {
		st.ExpectedPods, st.DesiredHealthy = expected, desired
		st.DisruptionsAllowed = max(healthy-desired, 0)
		cond := &v1.Condition{Type: "DisruptionAllowed", Status: controller.True, Reason: "SufficientPods"}
		if st.DisruptionsAllowed == 0 {
			cond = &v1.Condition{Type: "DisruptionAllowed", Status: controller.False, Reason: "InsufficientPods"}
		}
		controller.SetCondition(&st.Conditions, cond, now)
	}
	if recheck > 0 {
		c.loop.EnqueueAfter(key, recheck+100*time.Millisecond)
	}
	if proto.Equal(pdb.GetStatus(), st) {
		return nil
	}
	next := proto.Clone(pdb).(*v1.PodDisruptionBudget)
	next.Status = st
	_, err = c.pdbAPI.UpdateStatus(ctx, next)
	return err
}

// desired works out the expected pods and how many must stay healthy.
func (c *Controller) desired(pdb *v1.PodDisruptionBudget, pods []*v1.Pod) (expected, desired int32, err error) {
	sp := pdb.GetSpec()
	if ma := sp.GetMinAvailable(); ma != "" && !strings.HasSuffix(ma, "%") {
		n, err := controller.ScaledValue(ma, 0, true)
		return int32(len(pods)), n, err
	}
	if expected, err = c.expectedPods(pods); err != nil {
		return 0, 0, err
	}
	if ma := sp.GetMinAvailable(); ma != "" {
		desired, err = controller.ScaledValue(ma, expected, true)
		return expected, desired, err
	}
	unavailable, err := controller.ScaledValue(sp.GetMaxUnavailable(), expected, true)
	return expected, max(expected-unavailable, 0), err
}

// expectedPods sums the replicas of the controllers of pods, each once.
func (c *Controller) expectedPods(pods []*v1.Pod) (int32, error) {
	seen := map[string]bool{}
	var total int32
	for _, p := range pods {
		owner, k, err := c.scaleOwner(p.GetMetadata().GetNamespace(), controller.ControllerRef(p.GetMetadata()))
		if err != nil {
			return 0, fmt.Errorf("pod %s: %w", p.GetMetadata().GetName(), err)
		}
		uid := owner.GetMetadata().GetUid()
		if seen[uid] {
			continue
		}
		seen[uid] = true
		total += k.Scale.Replicas(owner)
	}
	return total, nil
}

// scaleOwner follows a pod's controller up to the object whose scale
// decides its pods (a Deployment over its ReplicaSet).
func (c *Controller) scaleOwner(ns string, ref *v1.OwnerReference) (v1.Object, *kinds.Kind, error) {
	if ref == nil {
		return nil, nil, fmt.Errorf("has no controller: a percentage needs the controllers' replicas")
	}
	src, ok := c.scales[ref.Kind]
	if !ok {
		return nil, nil, fmt.Errorf("its controller %s/%s has no scale", ref.Kind, ref.Name)
	}
	obj, ok := src.Get(ns + "/" + ref.Name)
	if !ok || obj.GetMetadata().GetUid() != ref.Uid {
		return nil, nil, fmt.Errorf("its controller %s/%s is not found", ref.Kind, ref.Name)
	}
	if up := controller.ControllerRef(obj.GetMetadata()); up != nil {
		if _, scalable := c.scales[up.Kind]; scalable {
			return c.scaleOwner(ns, up)
		}
	}
	k, _ := kinds.Lookup(ref.Kind)
	return obj, k, nil
}
