package scheduler

import (
	"maps"
	"slices"

	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// The informer handlers keep the cache and the queue in step with the
// cluster. They run on the informers' goroutines and only take short locks.

func (s *Scheduler) podHandler() informer.Handler[*v1.Pod] {
	return informer.Handler[*v1.Pod]{OnAdd: s.onPodAdd, OnUpdate: s.onPodUpdate, OnDelete: s.onPodDelete}
}

func (s *Scheduler) nodeHandler() informer.Handler[*v1.Node] {
	return informer.Handler[*v1.Node]{OnAdd: s.onNodeAdd, OnUpdate: s.onNodeUpdate, OnDelete: s.onNodeDelete}
}

// responsible reports whether pod is this scheduler's to place: unbound,
// not being deleted, and naming this scheduler.
func (s *Scheduler) responsible(pod *v1.Pod) bool {
	if pod.GetSpec().GetNodeName() != "" || pod.GetMetadata().GetDeletionTimestamp() != nil {
		return false
	}
	name := pod.GetSpec().GetSchedulerName()
	return name == s.cfg.SchedulerName || (name == "" && s.cfg.SchedulerName == DefaultSchedulerName)
}

// terminal pods (Succeeded, Failed) no longer use their node's resources.
func terminal(pod *v1.Pod) bool {
	ph := pod.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

func (s *Scheduler) onPodAdd(pod *v1.Pod) {
	defer s.cache.Observe(pod.GetMetadata().GetResourceVersion())
	switch {
	case pod.GetSpec().GetNodeName() != "":
		if !terminal(pod) {
			s.cache.AddPod(pod)
			s.queue.MoveAllToActive(framework.PodAdded)
		}
	case s.responsible(pod):
		pi := framework.NewPodInfo(pod)
		s.nominated.set(pi, pod.GetStatus().GetNominatedNodeName())
		s.queue.Add(pi)
	}
}

func (s *Scheduler) onPodUpdate(old, pod *v1.Pod) {
	defer s.cache.Observe(pod.GetMetadata().GetResourceVersion())
	key := v1.Key(pod)
	if pod.GetSpec().GetNodeName() != "" {
		s.nominated.forget(key)
		if old.GetSpec().GetNodeName() == "" {
			s.queue.Delete(key) // bound: by us, another scheduler or a user
		}
		if terminal(pod) {
			if s.cache.RemovePod(key) {
				s.queue.MoveAllToActive(framework.PodRemoved)
			}
			return
		}
		s.cache.AddPod(pod)
		if old.GetSpec().GetNodeName() == "" || !maps.Equal(old.GetMetadata().GetLabels(), pod.GetMetadata().GetLabels()) {
			s.queue.MoveAllToActive(framework.PodAdded)
		}
		return
	}
	if !s.responsible(pod) {
		s.nominated.forget(key)
		s.queue.Delete(key)
		return
	}
	pi := framework.NewPodInfo(pod)
	s.nominated.set(pi, pod.GetStatus().GetNominatedNodeName())
	if s.cache.IsAssumed(key) {
		return // we are binding it
	}
	if podChanged(old, pod) {
		s.queue.Update(pi)
		return
	}
	s.queue.Add(pi) // a status change: refresh, or re-add if we dropped it
}

// podChanged reports a change that can alter where a pod fits: its spec
// (only tolerations may change after creation) or its labels.
func podChanged(old, pod *v1.Pod) bool {
	if old.GetMetadata().GetGeneration() != pod.GetMetadata().GetGeneration() {
		return true
	}
	return !maps.Equal(old.GetMetadata().GetLabels(), pod.GetMetadata().GetLabels())
}

func (s *Scheduler) onPodDelete(pod *v1.Pod) {
	key := v1.Key(pod)
	s.nominated.forget(key)
	s.queue.Delete(key)
	if s.cache.RemovePod(key) {
		s.queue.MoveAllToActive(framework.PodRemoved)
	}
}

func (s *Scheduler) onNodeAdd(n *v1.Node) {
	prev, cur := s.cache.AddNode(n)
	if ev := nodeEvents(prev, cur); ev != 0 {
		s.queue.MoveAllToActive(ev)
	}
}

func (s *Scheduler) onNodeUpdate(_, n *v1.Node) { s.onNodeAdd(n) }

func (s *Scheduler) onNodeDelete(n *v1.Node) { s.cache.RemoveNode(n.GetMetadata().GetName()) }

// nodeEvents says what changed between two versions of a node's facts;
// a heartbeat changes nothing.
func nodeEvents(prev, cur *framework.Node) framework.ClusterEvent {
	if prev == nil {
		return framework.NodeAdded
	}
	var ev framework.ClusterEvent
	if !maps.Equal(prev.Labels, cur.Labels) {
		ev |= framework.NodeLabelsChanged
	}
	if !slices.EqualFunc(prev.Taints, cur.Taints, func(a, b *v1.Taint) bool {
		return a.Key == b.Key && a.Value == b.Value && a.Effect == b.Effect
	}) {
		ev |= framework.NodeTaintsChanged
	}
	if prev.Unschedulable != cur.Unschedulable {
		ev |= framework.NodeUnschedulableChanged
	}
	if prev.Ready != cur.Ready {
		ev |= framework.NodeReadyChanged
	}
	if prev.Allocatable != cur.Allocatable || prev.MaxPods != cur.MaxPods {
		ev |= framework.NodeAllocatableChanged
	}
	return ev
}

func (s *Scheduler) namespaceHandler() informer.Handler[*v1.Namespace] {
	return informer.Handler[*v1.Namespace]{OnUpdate: func(old, ns *v1.Namespace) {
		if !maps.Equal(old.GetMetadata().GetLabels(), ns.GetMetadata().GetLabels()) {
			s.queue.MoveAllToActive(framework.PodAdded | framework.PodRemoved) // a namespaceSelector may select it now, or no longer
		}
	}}
}

// namespaceLabels are a namespace's labels (nil if unknown).
func (s *Scheduler) namespaceLabels(name string) map[string]string {
	ns, ok := s.namespaces.Get(name)
	if !ok {
		return nil
	}
	return ns.GetMetadata().GetLabels()
}
