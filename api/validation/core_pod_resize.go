package validation

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// In-place resize (Kubernetes' InPlacePodVerticalScaling, beta and on by
// default since 1.33): containers[].resizePolicy says per resource whether
// a resize is applied to the running container (NotRequired) or restarts
// it (RestartContainer); the pods/resize subresource changes a pod's
// container cpu and memory requests and limits and nothing else
// (PodResize). Since Kubernetes 1.34 a memory limit may be lowered with
// NotRequired too: the kubelet refuses to go below the container's
// current usage, the API does not.

// Resize restart policies.
const (
	ResizeNotRequired      = "NotRequired"
	ResizeRestartContainer = "RestartContainer"
)

// resizePolicy checks containers[i].resizePolicy as Kubernetes'
// validateResizePolicy does; podRestart is the pod's restartPolicy.
func resizePolicy(errs *Errs, path string, c *v1.Container, kind containerKind, podRestart string) {
	if len(c.ResizePolicy) == 0 {
		return
	}
	if kind == initContainer {
		errs.Add(path+".resizePolicy", "Invalid value: %s: must not be set for init containers", policyList(c.ResizePolicy))
		return
	}
	seen := map[string]bool{}
	for i, p := range c.ResizePolicy {
		at := fmt.Sprintf("%s.resizePolicy[%d]", path, i)
		if seen[p.ResourceName] {
			errs.Add(at, "Duplicate value: %q", p.ResourceName)
		}
		seen[p.ResourceName] = true
		switch p.ResourceName {
		case "cpu", "memory":
		case "":
			errs.Add(path+".resizePolicy", "Required value")
		default:
			errs.Add(path+".resizePolicy", "Unsupported value: %q: supported values: \"cpu\", \"memory\"", p.ResourceName)
		}
		switch p.RestartPolicy {
		case ResizeNotRequired, ResizeRestartContainer:
		case "":
			errs.Add(path+".resizePolicy", "Required value")
		default:
			errs.Add(path+".resizePolicy", "Unsupported value: %q: supported values: \"NotRequired\", \"RestartContainer\"", p.RestartPolicy)
		}
		if podRestart == "Never" && p.RestartPolicy != ResizeNotRequired {
			errs.Add(path+".resizePolicy", "Invalid value: %s: must be 'NotRequired' when `restartPolicy` is 'Never'", policyList(c.ResizePolicy))
		}
	}
}

func policyList(ps []*v1.ContainerResizePolicy) string {
	s := "["
	for i, p := range ps {
		if i > 0 {
			s += " "
		}
		s += "{" + p.ResourceName + " " + p.RestartPolicy + "}"
	}
	return s + "]"
}

// ResizeRestartPolicy is c's resize policy for resource (NotRequired when
// it names none, as the defaulting does).
func ResizeRestartPolicy(c *v1.Container, res string) string {
	for _, p := range c.GetResizePolicy() {
		if p.ResourceName == res {
			return p.RestartPolicy
		}
	}
	return ResizeNotRequired
}

// PodResize is Kubernetes' ValidatePodResize: new is what a write to
// pods/resize would store (old with the containers' resources and resize
// policies taken from the request, everything else as stored). Only the
// cpu and memory requests and limits of the containers and sidecars may
// change, none may be removed, and the pod's QoS class may not change.
func PodResize(old, new *v1.Pod) Errs {
	var errs Errs
	if _, ok := old.GetMetadata().GetAnnotations()["kubernetes.io/config.mirror"]; ok {
		errs.Add("", "Forbidden: static pods cannot be resized")
		return errs
	}
	if was, is := qosOf(old), resource.PodQOSClass(new.Spec); was != is {
		errs.Add("spec", "Invalid value: %q: Pod QOS Class may not change as a result of resizing", new.GetStatus().GetQosClass())
	}
	if !resizeSupported(old) {
		errs.Add("spec", "Forbidden: Pod running on node without support for resize")
	}
	a, b := old.Spec, new.Spec
	if !proto.Equal(a.GetResources(), b.GetResources()) {
		// Kubernetes 1.34 has no in-place resize of pod-level resources
		// (InPlacePodLevelResourcesVerticalScaling is alpha and off).
		errs.Add("spec.resources", "Forbidden: pod-level resources may not be resized in place (InPlacePodLevelResourcesVerticalScaling is not supported)")
		return errs
	}
	for field, pair := range map[string][2][]*v1.Container{"containers": {a.Containers, b.Containers}, "initContainers": {a.InitContainers, b.InitContainers}} {
		was, is := pair[0], pair[1]
		if len(was) != len(is) {
			errs.Add("spec."+field, "Forbidden: %s may not be added or removed on resize", field)
			continue
		}
		for i := range was {
			if was[i].Name != is[i].Name {
				errs.Add(fmt.Sprintf("spec.%s[%d].name", field, i), "Forbidden: %s may not be renamed or reordered on resize", field)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for i, c := range a.InitContainers {
		containerResize(&errs, fmt.Sprintf("spec.initContainers[%d].resources", i), c, b.InitContainers[i])
	}
	for i, c := range a.Containers {
		containerResize(&errs, fmt.Sprintf("spec.containers[%d].resources", i), c, b.Containers[i])
	}
	// Only cpu and memory: put them back and nothing may differ.
	munged := proto.Clone(b).(*v1.PodSpec)
	for i, c := range munged.Containers {
		c.Resources = keepCPUMemory(c.Resources, a.Containers[i].Resources)
		if !proto.Equal(c, a.Containers[i]) {
			errs.Add("spec", "Forbidden: only cpu and memory resources are mutable")
			return errs
		}
	}
	for i, c := range munged.InitContainers {
		changed := !proto.Equal(c, a.InitContainers[i])
		c.Resources = keepCPUMemory(c.Resources, a.InitContainers[i].Resources)
		if !proto.Equal(c, a.InitContainers[i]) {
			errs.Add(fmt.Sprintf("spec.initContainers[%d]", i), "Forbidden: only cpu and memory resources for init or sidecar containers are mutable")
			continue
		}
		if changed && c.RestartPolicy != "Always" {
			errs.Add(fmt.Sprintf("spec.initContainers[%d].resources", i), "Forbidden: resources for non-sidecar init containers are immutable")
		}
	}
	if len(errs) == 0 && !proto.Equal(munged, a) {
		errs.Add("spec", "Forbidden: only cpu and memory resources are mutable")
	}
	return errs
}

// qosOf is the pod's QoS class as reported, or from its spec before the
// kubelet reported one.
func qosOf(p *v1.Pod) string {
	if q := p.GetStatus().GetQosClass(); q != "" {
		return q
	}
	return resource.PodQOSClass(p.Spec)
}

// resizeSupported is Kubernetes' isPodResizeRequestSupported: a node that
// can resize reports a running container's resources.
func resizeSupported(p *v1.Pod) bool {
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if cs.GetState().GetRunning() != nil {
			return cs.Resources != nil
		}
	}
	return true
}

// containerResize refuses removing a request or a limit.
func containerResize(errs *Errs, path string, old, new *v1.Container) {
	if !containsAll(old.GetResources().GetRequests(), new.GetResources().GetRequests()) {
		errs.Add(path+".requests", "Forbidden: resource requests cannot be removed")
	}
	if !containsAll(old.GetResources().GetLimits(), new.GetResources().GetLimits()) {
		errs.Add(path+".limits", "Forbidden: resource limits cannot be removed")
	}
}

func containsAll(old, new map[string]string) bool {
	for k := range old {
		if _, ok := new[k]; !ok {
			return false
		}
	}
	return true
}

// keepCPUMemory is r with its cpu and memory as in old (absent where old
// has none).
func keepCPUMemory(r, old *v1.ResourceRequirements) *v1.ResourceRequirements {
	if r == nil && old == nil {
		return nil
	}
	out := &v1.ResourceRequirements{}
	fix := func(m, was map[string]string) map[string]string {
		res := map[string]string{}
		for k, v := range m {
			if k != "cpu" && k != "memory" {
				res[k] = v
			}
		}
		for _, k := range []string{"cpu", "memory"} {
			if v, ok := was[k]; ok {
				res[k] = v
			}
		}
		if len(res) == 0 {
			return nil
		}
		return res
	}
	out.Requests = fix(r.GetRequests(), old.GetRequests())
	out.Limits = fix(r.GetLimits(), old.GetLimits())
	if old == nil && out.Requests == nil && out.Limits == nil {
		return nil
	}
	if old != nil && len(old.Requests) == 0 && len(old.Limits) == 0 && out.Requests == nil && out.Limits == nil {
		return old
	}
	return out
}
