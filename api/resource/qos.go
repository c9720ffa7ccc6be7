package resource

import v1 "github.com/tugboat/tugboat/api/v1"

// PodQOSClass is Kubernetes' QoS class of a pod spec's containers (init
// containers included): BestEffort when none sets a request or limit,
// Guaranteed when every container's cpu and memory limits are set and
// equal their requests, Burstable otherwise. The kubelet reports it as
// status.qosClass; a resize (pods/resize) may not change it.
func PodQOSClass(spec *v1.PodSpec) string {
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
