package validation

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Ephemeral containers (spec.ephemeralContainers), with Kubernetes' rules
// and messages: never set on create, added only through the
// pods/ephemeralcontainers subresource, where existing ones may be neither
// changed nor removed; a Container's fields but ports, resources, the
// probes, lifecycle, restartPolicy, resizePolicy and a volume mount's subPath; a name
// unique among all the pod's containers; targetContainerName one of the
// pod's other containers; never in a pod template.

// PodCreate is what only a pod's create refuses.
func PodCreate(p *v1.Pod) Errs {
	var errs Errs
	if len(p.GetSpec().GetEphemeralContainers()) > 0 {
		errs.Add("spec.ephemeralContainers", "Forbidden: cannot be set on create")
	}
	return errs
}

// PodEphemeralContainersUpdate enforces what Kubernetes enforces on a
// write of the pods/ephemeralcontainers subresource (old is stored, new
// the validated pod with the new list): existing ephemeral containers stay
// as they are, so the list only grows.
func PodEphemeralContainersUpdate(old, new *v1.Pod) Errs {
	var errs Errs
	byName := map[string]*v1.EphemeralContainer{}
	for _, c := range new.GetSpec().GetEphemeralContainers() {
		byName[c.Name] = c
	}
	for _, o := range old.GetSpec().GetEphemeralContainers() {
		n, ok := byName[o.Name]
		switch {
		case !ok:
			errs.Add("spec.ephemeralContainers", "Forbidden: existing ephemeral containers %q may not be removed", o.Name)
		case !proto.Equal(o, n):
			errs.Add(fmt.Sprintf("spec.ephemeralContainers[%s]", o.Name), "Forbidden: existing ephemeral containers %q may not be changed", o.Name)
		}
	}
	return errs
}

// ephemeralForbidden is "cannot be set for an Ephemeral Container".
const ephemeralForbidden = "Forbidden: cannot be set for an Ephemeral Container"

// ephemeralContainers validates s.EphemeralContainers at path; names are
// the pod's other containers' names, vols its volumes.
func ephemeralContainers(errs *Errs, path string, s *v1.PodSpec, names, vols map[string]bool) {
	all := map[string]bool{}
	for n := range names {
		all[n] = true
	}
	for i, ec := range s.EphemeralContainers {
		p := fmt.Sprintf("%s[%d]", path, i)
		c := ec.AsContainer()
		// Refused by name, then left out of the common container checks
		// (which would judge them as an app container's).
		for field, set := range map[string]bool{
			"ports": len(c.Ports) > 0, "resources": len(c.GetResources().GetRequests())+len(c.GetResources().GetLimits())+len(c.GetResources().GetClaims()) > 0,
			"livenessProbe": c.LivenessProbe != nil, "readinessProbe": c.ReadinessProbe != nil, "startupProbe": c.StartupProbe != nil,
			"lifecycle": c.Lifecycle != nil, "restartPolicy": c.RestartPolicy != "", "resizePolicy": len(c.ResizePolicy) > 0,
			"restartPolicyRules": len(c.RestartPolicyRules) > 0,
		} {
			if set {
				errs.Add(p+"."+field, ephemeralForbidden)
			}
		}
		c.Ports, c.Resources, c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle, c.RestartPolicy, c.ResizePolicy = nil, nil, nil, nil, nil, nil, "", nil
		c.RestartPolicyRules = nil
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" {
				errs.Add(fmt.Sprintf("%s.volumeMounts[%d].subPath", p, j), ephemeralForbidden)
			}
		}
		container(errs, p, c, appContainer, s.TerminationGracePeriodSeconds, all, vols, map[string]bool{})
		if t := ec.TargetContainerName; t != "" && !names[t] {
			errs.Add(p+".targetContainerName", "Not found: %q", t)
		}
	}
}
