package eviction

import (
	"sort"

	"github.com/tugboat/tugboat/api/quota"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// QoS classes, in eviction order.
const (
	BestEffort = "BestEffort"
	Burstable  = "Burstable"
	Guaranteed = "Guaranteed"
)

// qosClass is the pod's QoS class from its spec, as the kubelet reports
// it (resource.PodQOSClass).
func qosClass(p *v1.Pod) string { return resource.PodQOSClass(p.GetSpec()) }

var qosOrder = map[string]int{BestEffort: 0, Burstable: 1, Guaranteed: 2}

// memoryRequest is the pod's memory request as Kubernetes' eviction
// ranking reads it (podRequest, through resourcehelper.PodRequests): the
// pod-level request (spec.resources) where set, else its containers'
// aggregate (app containers and sidecars together, or a larger init
// container) — quota.PodRequests.
func memoryRequest(p *v1.Pod) int64 {
	requests, _ := quota.PodRequests(p.GetSpec())
	return requests["memory"].Value()
}

// rank orders the pods that may be evicted, first to go first: running
// pods (not terminal, not being deleted) by QoS class (BestEffort first),
// then priority (lower first), then memory used above the request (more
// first; usage may be nil), then the newest.
func rank(pods []*v1.Pod, usage map[string]int64) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range pods {
		ph := p.GetStatus().GetPhase()
		if ph == "Succeeded" || ph == "Failed" || p.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		out = append(out, p)
	}
	over := func(p *v1.Pod) int64 { return usage[p.GetMetadata().GetUid()] - memoryRequest(p) }
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if qa, qb := qosOrder[qosClass(a)], qosOrder[qosClass(b)]; qa != qb {
			return qa < qb
		}
		if pa, pb := a.GetSpec().GetPriority(), b.GetSpec().GetPriority(); pa != pb {
			return pa < pb
		}
		if oa, ob := over(a), over(b); usage != nil && oa != ob {
			return oa > ob
		}
		return a.GetMetadata().GetCreationTimestamp().AsTime().After(b.GetMetadata().GetCreationTimestamp().AsTime())
	})
	return out
}
