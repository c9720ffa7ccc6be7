package validation

import (
	"fmt"
	"sort"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// podResourceClaims checks spec.resourceClaims and what containers refer
// to in resources.claims, with Kubernetes' texts (validatePodResourceClaim,
// validateResourceClaimNames).
func podResourceClaims(errs *Errs, path string, s *v1.PodSpec) {
	names := map[string]bool{}
	for i, c := range s.GetResourceClaims() {
		p := fmt.Sprintf("%s.resourceClaims[%d]", path, i)
		switch {
		case c.GetName() == "":
			errs.Add(p+".name", "Required value")
		case names[c.GetName()]:
			errs.Add(p+".name", "Duplicate value: %q", c.GetName())
		default:
			DNSLabel(errs, p+".name", c.GetName())
			names[c.GetName()] = true
		}
		sources := 0
		if c.ResourceClaimName != nil {
			sources++
			DNSSubdomain(errs, p+".resourceClaimName", c.GetResourceClaimName())
		}
		if c.ResourceClaimTemplateName != nil {
			sources++
			DNSSubdomain(errs, p+".resourceClaimTemplateName", c.GetResourceClaimTemplateName())
		}
		switch sources {
		case 0:
			errs.Add(p, "Required value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")
		case 2:
			errs.Add(p, "Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified")
		}
	}
	if len(s.GetResourceClaims()) > 0 && s.GetNodeName() != "" {
		// Kubernetes' kubelet would fail to prepare the devices; Tugboat's
		// has no DRA support at all and would run the pod without them.
		errs.Add(path+".nodeName", "Forbidden: a pod with resourceClaims must be placed by the scheduler, which waits for its claims to be allocated (Tugboat runs no DRA driver, so no kubelet can prepare devices)")
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	check := func(cp string, c *v1.Container) {
		seen := map[string]bool{}
		for i, rc := range c.GetResources().GetClaims() {
			p := fmt.Sprintf("%s.resources.claims[%d]", cp, i)
			if rc.GetName() == "" {
				errs.Add(p, "Required value")
				continue
			}
			key := rc.GetName()
			if rc.GetRequest() != "" {
				key += "/" + rc.GetRequest()
			}
			if seen[key] {
				errs.Add(p, "Duplicate value: %q", key)
			}
			seen[key] = true
			if !names[rc.GetName()] {
				if len(sorted) == 0 {
					errs.Add(p, "Not found: %q: must be one of the names in pod.spec.resourceClaims which is empty", rc.GetName())
				} else {
					errs.Add(p, "Not found: %q: must be one of the names in pod.spec.resourceClaims: %s", rc.GetName(), strings.Join(sorted, ", "))
				}
			}
			if rc.GetRequest() != "" {
				DNSLabel(errs, p+".request", rc.GetRequest())
			}
		}
	}
	for i, c := range s.GetInitContainers() {
		check(fmt.Sprintf("%s.initContainers[%d]", path, i), c)
	}
	for i, c := range s.GetContainers() {
		check(fmt.Sprintf("%s.containers[%d]", path, i), c)
	}
}

// podResourceClaimStatuses checks status.resourceClaimStatuses: each
// names an entry of spec.resourceClaims, once.
func podResourceClaimStatuses(errs *Errs, p *v1.Pod) {
	names := map[string]bool{}
	for _, c := range p.GetSpec().GetResourceClaims() {
		names[c.GetName()] = true
	}
	seen := map[string]bool{}
	for i, st := range p.GetStatus().GetResourceClaimStatuses() {
		sp := fmt.Sprintf("status.resourceClaimStatuses[%d]", i)
		switch {
		case !names[st.GetName()]:
			errs.Add(sp+".name", "Invalid value: %q: must match the name of an entry in `spec.resourceClaims`", st.GetName())
		case seen[st.GetName()]:
			errs.Add(sp+".name", "Duplicate value: %q", st.GetName())
		}
		seen[st.GetName()] = true
		if st.ResourceClaimName != nil {
			DNSSubdomain(errs, sp+".resourceClaimName", st.GetResourceClaimName())
		}
	}
}
