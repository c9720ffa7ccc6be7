package scheduler

import (
	"context"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// preempt runs after no node fits pi (Kubernetes' DefaultPreemption
// PostFilter): unless its preemptionPolicy is Never, it looks for the node
// where deleting the fewest, least important lower-priority pods makes
// room (framework.FindCandidates, PickCandidate; PodDisruptionBudgets with
// no disruption left are honoured when choosing, as Kubernetes does: a
// node needing fewer budget violations wins), writes the pod's
// status.nominatedNodeName, and deletes the victims through the API with
// their grace period, each first given the condition DisruptionTarget=True
// (reason PreemptionByScheduler) and then a Preempted Event. The pod itself
// waits in the queue until the victims are gone (PodRemoved retries it);
// meanwhile the room they free is kept for it (nominator): pods of lower
// or equal priority are not placed into it, and the pod tries its
// nominated node first.
//
// It returns what to add to the "0/N nodes are available" message: "" when
// it preempted, else "preemption: ..." saying why preemption will not help.
func (s *Scheduler) preempt(ctx context.Context, pi *framework.PodInfo, pod *v1.Pod) string {
	if pod.GetSpec().GetPreemptionPolicy() == "Never" {
		return "preemption: not eligible due to preemptionPolicy=Never."
	}
	if nominated := pod.GetStatus().GetNominatedNodeName(); nominated != "" && s.terminatingLowerOn(nominated, pi.Priority) {
		return "preemption: not eligible due to a terminating pod on the nominated node."
	}
	nodes := s.snapshot.Nodes()
	byNode := s.cache.PodsByNode()
	budgets := s.pdbs.List()
	podsOn := func(node string) []framework.Victim {
		allowed := map[*v1.PodDisruptionBudget]int32{}
		var out []framework.Victim
		for _, p := range byNode[node] {
			v := framework.Victim{Info: p, StartTime: p.StartTime}
			for _, b := range budgets {
				if b.GetMetadata().GetNamespace() != p.Namespace || !budgetSelects(b, p.Labels) {
					continue
				}
				if _, seen := allowed[b]; !seen {
					allowed[b] = b.GetStatus().GetDisruptionsAllowed()
				}
				if allowed[b] > 0 {
					allowed[b]--
				} else {
					v.ViolatesBudget = true
				}
			}
			out = append(out, v)
		}
		return out
	}
	candidates, reasons := framework.FindCandidates(pi, nodes, s.pipeline.Filters(), podsOn)
	best := framework.PickCandidate(candidates)
	if best == nil {
		return "preemption: " + framework.FitMessage(len(nodes), reasons)
	}
	node := best.Node.Name()
	if _, err := client.For[*v1.Pod](s.client).Mutate(ctx, pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName(), true, func(p *v1.Pod) error {
		if p.GetSpec().GetNodeName() != "" {
			return errBound
		}
		if p.Status == nil {
			p.Status = &v1.PodStatus{}
		}
		p.Status.NominatedNodeName = node
		return nil
	}); err != nil {
		s.log.Warn("nominating a node failed; not preempting", "pod", pi.Key, "node", node, "err", err)
		return ""
	}
	s.nominated.set(pi, node) // at once: the next decisions keep the room
	names := make([]string, 0, len(best.Victims))
	for _, v := range best.Victims {
		ns, name := splitKey(v.Info.Key)
		victim, ok := s.pods.Get(v.Info.Key)
		if !ok {
			continue
		}
		// DisruptionTarget=True first, as Kubernetes does: the victim's
		// controllers and the Job's podFailurePolicy see why it goes.
		_, err := client.For[*v1.Pod](s.client).Mutate(ctx, ns, name, true, func(p *v1.Pod) error {
			if p.Status == nil {
				p.Status = &v1.PodStatus{}
			}
			setCondition(p.Status, &v1.Condition{Type: condDisruptionTarget, Status: "True", Reason: reasonPreemptionByScheduler,
				Message: s.cfg.SchedulerName + ": preempting to accommodate a higher priority pod"})
			return nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("marking a preemption victim failed; deleting it anyway", "pod", pi.Key, "victim", v.Info.Key, "err", err)
		}
		_, err = client.For[*v1.Pod](s.client).Delete(ctx, ns, name, client.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			s.log.Warn("deleting a preemption victim failed", "pod", pi.Key, "victim", v.Info.Key, "err", err)
			continue
		}
		s.recorder.Eventf(victim, record.Normal, "Preempted", "Preempted by pod %s on node %s", pi.UID, node)
		names = append(names, v.Info.Key)
	}
	s.metrics.preemptions.Inc()
	s.log.Info("preempted", "pod", pi.Key, "node", node, "victims", strings.Join(names, ","))
	return ""
}

// terminatingLowerOn reports whether a pod of lower priority than
// priority is being deleted on node: the room a previous preemption made
// is still coming.
func (s *Scheduler) terminatingLowerOn(node string, priority int32) bool {
	for _, p := range s.pods.List() {
		if p.GetSpec().GetNodeName() == node && p.GetMetadata().GetDeletionTimestamp() != nil && p.GetSpec().GetPriority() < priority {
			return true
		}
	}
	return false
}

func budgetSelects(b *v1.PodDisruptionBudget, podLabels map[string]string) bool {
	sel := b.GetSpec().GetSelector()
	if sel == nil {
		return false
	}
	s, err := labels.FromLabelSelector(sel)
	return err == nil && s.Matches(podLabels)
}
