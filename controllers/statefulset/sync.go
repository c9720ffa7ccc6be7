package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	set, ok := c.sets.Get(key)
	if !ok {
		return nil
	}
	sel, err := labels.FromLabelSelector(set.GetSpec().GetSelector())
	if err != nil || sel.Empty() {
		return controller.Permanent(fmt.Errorf("statefulset %s: spec.selector selects nothing or is invalid: %v", key, err))
	}
	updateRev, err := c.history.Current(ctx, set, set.GetSpec().GetTemplate())
	if err != nil {
		return err
	}
	m := set.GetMetadata()
	candidates := append(c.pods.ByIndex(controller.IndexControllerUID, m.GetUid()), c.pods.ByIndex(controller.IndexOrphanNamespace, m.GetNamespace())...)
	claimer := &controller.Claimer[*v1.Pod]{API: c.podAPI, Owner: set, APIVersion: "apps/v1", Kind: "StatefulSet", Selector: sel,
		CanAdopt: controller.RecheckOwner(c.ssAPI, set)}
	pods, err := claimer.Claim(ctx, candidates)
	if err != nil {
		return err
	}
	replicas := int(set.GetSpec().GetReplicas())
	byOrdinal := map[int]*v1.Pod{}
	var condemned []*v1.Pod // ordinals >= replicas, highest first
	for _, p := range pods {
		i, ok := ordinal(set, p)
		if !ok {
			continue
		}
		if i >= replicas {
			condemned = append(condemned, p)
		} else {
			byOrdinal[i] = p
		}
	}
	var manageErr error
	if m.GetDeletionTimestamp() == nil {
		manageErr = c.manage(ctx, set, byOrdinal, condemned, updateRev)
	}
	errs := []error{manageErr, c.writeStatus(ctx, set, pods, updateRev),
		c.history.Cleanup(ctx, set, int(set.GetSpec().GetRevisionHistoryLimit()), pods, updateRev)}
	return errors.Join(errs...)
}

// ordinal is the pod's index if its name is <set>-<i>.
func ordinal(set *v1.StatefulSet, p *v1.Pod) (int, bool) {
	rest, ok := strings.CutPrefix(p.GetMetadata().GetName(), set.GetMetadata().GetName()+"-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == rest
}

func healthy(p *v1.Pod) bool {
	return p != nil && p.GetMetadata().GetDeletionTimestamp() == nil && p.GetStatus().GetPhase() == "Running" && controller.IsPodReady(p)
}

// manage takes the next steps: create, recreate, scale down, update.
func (c *Controller) manage(ctx context.Context, set *v1.StatefulSet, byOrdinal map[int]*v1.Pod, condemned []*v1.Pod, updateRev string) error {
	sp := set.GetSpec()
	ordered := sp.GetPodManagementPolicy() != "Parallel"
	replicas := int(sp.GetReplicas())
	var errs []error
	for i := 0; i < replicas; i++ {
		p := byOrdinal[i]
		switch {
		case p == nil:
			if err := c.createPod(ctx, set, i, updateRev); err != nil {
				return err
			}
			if ordered {
				return nil // wait for it to be Running and Ready
			}
			continue
		case p.GetStatus().GetPhase() == "Failed" || p.GetStatus().GetPhase() == "Succeeded":
			if p.GetMetadata().GetDeletionTimestamp() == nil {
				c.events.Eventf(set, controller.Warning, "RecreatingFailedPod", "StatefulSet %s is recreating failed Pod %s", set.GetMetadata().GetName(), p.GetMetadata().GetName())
				errs = append(errs, c.deletePod(ctx, set, p))
			}
			if ordered {
				return errors.Join(errs...)
			}
		case ordered && !healthy(p):
			return nil // the next ordinal waits for this one
		}
	}
	// Scale down: highest ordinal first; ordered: one at a time, all others healthy.
	sortHighestFirst(set, condemned)
	for _, p := range condemned {
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			if ordered {
				return nil // wait until it is gone
			}
			continue
		}
		if ordered {
			for i := 0; i < replicas; i++ {
				if !healthy(byOrdinal[i]) {
					return nil
				}
			}
		}
		errs = append(errs, c.deletePod(ctx, set, p))
		if ordered {
			return errors.Join(errs...)
		}
	}
	if len(condemned) == 0 && sp.GetPersistentVolumeClaimRetentionPolicy().GetWhenScaled() == "Delete" {
		errs = append(errs, c.deleteScaledClaims(ctx, set))
	}
	if err := errors.Join(errs...); err != nil || sp.GetUpdateStrategy().GetType() != "RollingUpdate" {
		return err
	}
	// Rolling update, highest ordinal first down to the partition, one pod at a time.
	for i := 0; i < replicas; i++ {
		if !healthy(byOrdinal[i]) {
			return nil
		}
	}
	partition := int(sp.GetUpdateStrategy().GetRollingUpdate().GetPartition())
	for i := replicas - 1; i >= partition; i-- {
		if p := byOrdinal[i]; p.GetMetadata().GetLabels()[controller.HashLabel] != updateRev {
			return c.deletePod(ctx, set, p)
		}
	}
	return nil
}

func sortHighestFirst(set *v1.StatefulSet, pods []*v1.Pod) {
	for i := 1; i < len(pods); i++ {
		for j := i; j > 0; j-- {
			a, _ := ordinal(set, pods[j-1])
			b, _ := ordinal(set, pods[j])
			if a < b {
				pods[j-1], pods[j] = pods[j], pods[j-1]
			}
		}
	}
}

// claimName is <template>-<set>-<i>.
func claimName(t *v1.PersistentVolumeClaim, set *v1.StatefulSet, i int) string {
	return fmt.Sprintf("%s-%s-%d", t.GetMetadata().GetName(), set.GetMetadata().GetName(), i)
}

// createPod makes ordinal i's claims (if missing) and then its pod.
func (c *Controller) createPod(ctx context.Context, set *v1.StatefulSet, i int, rev string) error {
	sp, m := set.GetSpec(), set.GetMetadata()
	name := fmt.Sprintf("%s-%d", m.GetName(), i)
	for _, t := range sp.GetVolumeClaimTemplates() {
		if err := c.ensureClaim(ctx, set, t, i, name); err != nil {
			return err
		}
	}
	spec := proto.Clone(sp.GetTemplate().GetSpec()).(*v1.PodSpec)
	spec.Hostname, spec.Subdomain = name, sp.GetServiceName()
	for _, t := range sp.GetVolumeClaimTemplates() {
		vol := &v1.Volume{Name: t.GetMetadata().GetName(), PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(t, set, i)}}
		replaced := false
		for j, v := range spec.Volumes {
			if v.Name == vol.Name {
				spec.Volumes[j], replaced = vol, true
			}
		}
		if !replaced {
			spec.Volumes = append(spec.Volumes, vol)
		}
	}
	lbls := map[string]string{}
	for k, v := range sp.GetTemplate().GetMetadata().GetLabels() {
		lbls[k] = v
	}
	lbls[PodNameLabel], lbls[PodIndexLabel], lbls[controller.HashLabel] = name, strconv.Itoa(i), rev
	var ann map[string]string
	if a := sp.GetTemplate().GetMetadata().GetAnnotations(); a != nil {
		ann = map[string]string{}
		for k, v := range a {
			ann[k] = v
		}
	}
	pod := &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: m.GetNamespace(), Labels: lbls, Annotations: ann,
		OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(set, "apps/v1", "StatefulSet")}}, Spec: spec}
	_, err := c.podAPI.Create(ctx, pod)
	if apierrors.IsAlreadyExists(err) {
		return nil // the cache lags (or the old pod is still going): next sync
	}
	if err != nil {
		c.events.Eventf(set, controller.Warning, "FailedCreate", "create Pod %s in StatefulSet %s failed error: %v", name, m.GetName(), err)
		return err
	}
	c.events.Eventf(set, controller.Normal, "SuccessfulCreate", "create Pod %s in StatefulSet %s successful", name, m.GetName())
	return nil
}

// ensureClaim makes ordinal i's claim of template t if it is missing.
func (c *Controller) ensureClaim(ctx context.Context, set *v1.StatefulSet, t *v1.PersistentVolumeClaim, i int, pod string) error {
	m := set.GetMetadata()
	name := claimName(t, set, i)
	if _, ok := c.pvcs.Get(m.GetNamespace() + "/" + name); ok {
		return nil
	}
	lbls := map[string]string{}
	for k, v := range set.GetSpec().GetSelector().GetMatchLabels() {
		lbls[k] = v
	}
	for k, v := range t.GetMetadata().GetLabels() {
		lbls[k] = v
	}
	claim := &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: name, Namespace: m.GetNamespace(), Labels: lbls,
		Annotations: t.GetMetadata().GetAnnotations()}, Spec: proto.Clone(t.GetSpec()).(*v1.PersistentVolumeClaimSpec)}
	if set.GetSpec().GetPersistentVolumeClaimRetentionPolicy().GetWhenDeleted() == "Delete" {
		ref := controller.NewControllerRef(set, "apps/v1", "StatefulSet")
		ref.Controller = false
		claim.Metadata.OwnerReferences = []*v1.OwnerReference{ref}
	}
	_, err := c.pvcAPI.Create(ctx, claim)
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		c.events.Eventf(set, controller.Warning, "FailedCreate", "create Claim %s for Pod %s in StatefulSet %s failed error: %v", name, pod, m.GetName(), err)
		return err
	}
	c.events.Eventf(set, controller.Normal, "SuccessfulCreate", "create Claim %s Pod %s in StatefulSet %s success", name, pod, m.GetName())
	return nil
}

// deleteScaledClaims deletes the claims of ordinals scaled away
// (whenScaled: Delete), once their pods are gone.
func (c *Controller) deleteScaledClaims(ctx context.Context, set *v1.StatefulSet) error {
	var errs []error
	replicas := int(set.GetSpec().GetReplicas())
	for _, t := range set.GetSpec().GetVolumeClaimTemplates() {
		prefix := t.GetMetadata().GetName() + "-" + set.GetMetadata().GetName() + "-"
		for _, pvc := range c.pvcs.List() {
			rest, ok := strings.CutPrefix(pvc.GetMetadata().GetName(), prefix)
			i, err := strconv.Atoi(rest)
			if !ok || err != nil || i < replicas || pvc.GetMetadata().GetNamespace() != set.GetMetadata().GetNamespace() || pvc.GetMetadata().GetDeletionTimestamp() != nil {
				continue
			}
			if _, err := c.pvcAPI.Delete(ctx, pvc.GetMetadata().GetNamespace(), pvc.GetMetadata().GetName(), client.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) deletePod(ctx context.Context, set *v1.StatefulSet, p *v1.Pod) error {
	m := p.GetMetadata()
	_, err := c.podAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{ResourceVersion: m.GetResourceVersion()})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		c.events.Eventf(set, controller.Warning, "FailedDelete", "delete Pod %s in StatefulSet %s failed error: %v", m.GetName(), set.GetMetadata().GetName(), err)
		return err
	}
	c.events.Eventf(set, controller.Normal, "SuccessfulDelete", "delete Pod %s in StatefulSet %s successful", m.GetName(), set.GetMetadata().GetName())
	return nil
}

func (c *Controller) writeStatus(ctx context.Context, set *v1.StatefulSet, pods []*v1.Pod, updateRev string) error {
	now := c.now()
	old := set.GetStatus()
	st := &v1.StatefulSetStatus{ObservedGeneration: set.GetMetadata().GetGeneration(), UpdateRevision: updateRev,
		CurrentRevision: old.GetCurrentRevision(), Conditions: old.GetConditions()}
	if old != nil {
		st.CollisionCount = old.CollisionCount
	}
	if st.CurrentRevision == "" {
		st.CurrentRevision = updateRev
	}
	for _, p := range pods {
		if p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		st.Replicas++
		if controller.IsPodReady(p) {
			st.ReadyReplicas++
		}
		if controller.IsPodAvailable(p, set.GetSpec().GetMinReadySeconds(), now) {
			st.AvailableReplicas++
		}
		switch p.GetMetadata().GetLabels()[controller.HashLabel] {
		case updateRev:
			st.UpdatedReplicas++
		case st.CurrentRevision:
			st.CurrentReplicas++
		}
	}
	if st.CurrentRevision == updateRev {
		st.CurrentReplicas = st.UpdatedReplicas
	}
	if st.UpdatedReplicas == set.GetSpec().GetReplicas() && st.ReadyReplicas == st.UpdatedReplicas && st.Replicas == st.UpdatedReplicas {
		st.CurrentRevision, st.CurrentReplicas = updateRev, st.UpdatedReplicas
	}
	if proto.Equal(old, st) {
		return nil
	}
	next := proto.Clone(set).(*v1.StatefulSet)
	next.Status = st
	_, err := c.ssAPI.UpdateStatus(ctx, next)
	return err
}
