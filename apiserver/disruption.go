package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// disruptionBudgets is the PodDisruptionBudget eviction check (policy/v1),
// always the first of Config.EvictionChecks. An eviction of a pod that
// one budget selects is allowed only while that budget's
// status.disruptionsAllowed is above zero, and it takes one: the budget's
// status is updated (disruptionsAllowed-1, the pod in disruptedPods) with
// a compare-and-swap before the pod is deleted, so two evictions racing
// for the last allowed disruption cannot both win. The disruption
// controller recounts from the pods (and drops disruptedPods entries once
// the pod is gone, or after two minutes).
//
// As in Kubernetes: a pod two or more budgets select cannot be evicted; a
// budget whose status is older than its spec (observedGeneration) refuses
// until the controller caught up; a pod that is not Ready may be evicted
// without taking from the budget when the budget's policy is AlwaysAllow,
// or (IfHealthyBudget) while currentHealthy >= desiredHealthy.
type disruptionBudgets struct{}

func (disruptionBudgets) CheckEviction(ctx context.Context, st *storage.Store, pod *v1.Pod, req *v1.DeleteRequest) error {
	pdbKind, _ := kinds.Lookup("PodDisruptionBudget")
	m := pod.GetMetadata()
	res, err := st.List(ctx, pdbKind, storage.ListOptions{Namespace: m.GetNamespace()})
	if err != nil {
		return err
	}
	var matching []*v1.PodDisruptionBudget
	for _, o := range res.Items {
		pdb := o.(*v1.PodDisruptionBudget)
		if budgetSelects(pdb, pod) {
			matching = append(matching, pdb)
		}
	}
	switch len(matching) {
	case 0:
		return nil
	case 1:
	default:
		var names []string
		for _, p := range matching {
			names = append(names, p.GetMetadata().GetName())
		}
		return fmt.Errorf("this pod has more than one PodDisruptionBudget, which the eviction subresource does not support (%s)", strings.Join(names, ", "))
	}
	name := matching[0].GetMetadata().GetName()
	ready := podReady(pod)
	_, err = st.GuaranteedUpdate(ctx, pdbKind, m.GetNamespace(), name, func(cur v1.Object) (v1.Object, error) {
		pdb := cur.(*v1.PodDisruptionBudget)
		s := pdb.GetStatus()
		if s.GetObservedGeneration() < pdb.GetMetadata().GetGeneration() {
			return nil, apierrors.New(apierrors.ErrTooManyRequests,
				"Cannot evict pod as it would violate the pod's disruption budget. The disruption budget %s is still being processed by the server.", name)
		}
		if !ready {
			if pdb.GetSpec().GetUnhealthyPodEvictionPolicy() == "AlwaysAllow" || s.GetCurrentHealthy() >= s.GetDesiredHealthy() {
				return cur, nil // a not-ready pod does not take from the budget
			}
		}
		if s.GetDisruptionsAllowed() <= 0 {
			return nil, apierrors.New(apierrors.ErrTooManyRequests,
				"Cannot evict pod as it would violate the pod's disruption budget. The disruption budget %s needs %d healthy pods and has %d currently",
				name, s.GetDesiredHealthy(), s.GetCurrentHealthy())
		}
		if req.GetDryRun() {
			return cur, nil
		}
		if len(s.GetDisruptedPods()) >= maxDisruptedPods {
			return nil, apierrors.New(apierrors.ErrTooManyRequests,
				"Cannot evict pod: the disruption budget %s has %d evictions not yet processed by its controller", name, len(s.GetDisruptedPods()))
		}
		s.DisruptionsAllowed--
		if s.DisruptedPods == nil {
			s.DisruptedPods = map[string]*timestamppb.Timestamp{}
		}
		s.DisruptedPods[m.GetName()] = timestamppb.New(time.Now())
		return pdb, nil
	})
	return err
}

// maxDisruptedPods bounds the evictions one budget records before its
// controller has processed them (Kubernetes' MaxDisruptedPodSize).
const maxDisruptedPods = 2000

// budgetSelects reports whether a budget's selector selects pod (policy/v1:
// an empty selector selects every pod of the namespace, an unset one none).
func budgetSelects(pdb *v1.PodDisruptionBudget, pod *v1.Pod) bool {
	sel := pdb.GetSpec().GetSelector()
	if sel == nil {
		return false
	}
	s, err := labels.FromLabelSelector(sel)
	if err != nil {
		return false
	}
	return s.Matches(pod.GetMetadata().GetLabels())
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.GetType() == "Ready" {
			return c.GetStatus() == "True"
		}
	}
	return false
}

// evictionChecks are the checks an eviction runs: the disruption budgets,
// then the configured ones.
func evictionChecks(cfg []EvictionCheck) []EvictionCheck {
	return append([]EvictionCheck{disruptionBudgets{}}, cfg...)
}
