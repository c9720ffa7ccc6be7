package resource

import (
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// IsSupportedPodLevelResource is Kubernetes' IsSupportedPodLevelResource:
// cpu, memory and hugepages-<size> may be set in a pod's spec.resources.
func IsSupportedPodLevelResource(name string) bool {
	return name == "cpu" || name == "memory" || strings.HasPrefix(name, "hugepages-")
}

// HasPodLevelResources reports whether the pod spec sets pod-level
// requests or limits (Kubernetes' IsPodLevelResourcesSet).
func HasPodLevelResources(spec *v1.PodSpec) bool {
	r := spec.GetResources()
	return len(r.GetRequests()) > 0 || len(r.GetLimits()) > 0
}

// AggregateContainerRequests is Kubernetes' AggregateContainerRequests:
// what a pod's containers together request (an absent request counts as
// zero; validation has parsed every quantity). The app containers and
// sidecars run together; a regular init container runs alone with the
// sidecars started before it; the pod needs the larger of the two.
func AggregateContainerRequests(spec *v1.PodSpec) map[string]Quantity {
	return aggregate(spec, func(c *v1.Container) map[string]string { return c.GetResources().GetRequests() })
}

// AggregateContainerLimits is the same for limits.
func AggregateContainerLimits(spec *v1.PodSpec) map[string]Quantity {
	return aggregate(spec, func(c *v1.Container) map[string]string { return c.GetResources().GetLimits() })
}

func aggregate(spec *v1.PodSpec, of func(*v1.Container) map[string]string) map[string]Quantity {
	sum := map[string]Quantity{}
	add := func(dst map[string]Quantity, m map[string]string) {
		for k, v := range m {
			q, _ := Parse(v)
			dst[k] = dst[k].Add(q)
		}
	}
	for _, c := range spec.GetContainers() {
		add(sum, of(c))
	}
	sidecars, initMax := map[string]Quantity{}, map[string]Quantity{}
	for _, c := range spec.GetInitContainers() {
		tmp := map[string]Quantity{}
		if c.GetRestartPolicy() == "Always" {
			add(sum, of(c))
			add(sidecars, of(c))
			for k, q := range sidecars {
				tmp[k] = q
			}
		} else {
			add(tmp, of(c))
			for k, q := range sidecars {
				tmp[k] = tmp[k].Add(q)
			}
		}
		for k, q := range tmp {
			if cur, ok := initMax[k]; !ok || q.Cmp(cur) > 0 {
				initMax[k] = q
			}
		}
	}
	for k, q := range initMax {
		if cur, ok := sum[k]; !ok || q.Cmp(cur) > 0 {
			sum[k] = q
		}
	}
	return sum
}
