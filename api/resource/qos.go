package resource

import v1 "github.com/tugboat/tugboat/api/v1"

// PodQOSClass is Kubernetes' QoS class of a pod spec's containers (init
// containers included): BestEffort when none sets a request or limit,
// Guaranteed when every container's cpu and memory limits are set and
// equal their requests, Burstable otherwise. The kubelet reports it as
// status.qosClass; a resize (pods/resize) may not change it.
//
// A pod with pod-level resources (spec.resources) is classed by them
// alone, as Kubernetes' ComputePodQOS does: BestEffort without a positive
// cpu or memory request or limit, Guaranteed when both cpu and memory
// limits are set and every request equals its limit, Burstable otherwise.
func PodQOSClass(spec *v1.PodSpec) string {
	if HasPodLevelResources(spec) {
		return podLevelQOS(spec.GetResources())
	}
	all := append(append([]*v1.Container{}, spec.GetInitContainers()...), spec.GetContainers()...)
	any, guaranteed := false, true
	for _, c := range all {
		req, lim := c.GetResources().GetRequests(), c.GetResources().GetLimits()
		if len(req) > 0 || len(lim) > 0 {
			any = true
		}
		for _, r := range []string{"cpu", "memory"} {
			l, ok := lim[r]
			if !ok {
				guaranteed = false
				continue
			}
			if q, ok := req[r]; ok && !sameQuantity(q, l) {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return "BestEffort"
	case guaranteed:
		return "Guaranteed"
	}
	return "Burstable"
}

func sameQuantity(a, b string) bool {
	qa, err1 := Parse(a)
	qb, err2 := Parse(b)
	return err1 == nil && err2 == nil && qa.Cmp(qb) == 0
}

// podLevelQOS is ComputePodQOS's pod-level branch: only cpu and memory
// count, and only positive amounts.
func podLevelQOS(r *v1.ResourceRequirements) string {
	positive := func(m map[string]string) map[string]Quantity {
		out := map[string]Quantity{}
		for _, name := range []string{"cpu", "memory"} {
			if v, ok := m[name]; ok {
				if q, err := Parse(v); err == nil && q.Cmp(Quantity{}) > 0 {
					out[name] = q
				}
			}
		}
		return out
	}
	requests, limits := positive(r.GetRequests()), positive(r.GetLimits())
	if len(requests) == 0 && len(limits) == 0 {
		return "BestEffort"
	}
	_, cpu := limits["cpu"]
	_, mem := limits["memory"]
	guaranteed := cpu && mem
	for name, req := range requests {
		if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
			guaranteed = false
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return "Guaranteed"
	}
	return "Burstable"
}
