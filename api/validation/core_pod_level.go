package validation

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tugboat/tugboat/api/quota"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Three pod fields of Kubernetes 1.34, with its rules and messages:
// pod-level resources (validatePodResources,
// validatePodResourceConsistency), hostUsers (validateHostUsers) and a
// container's restartPolicy and restartPolicyRules
// (validateContainerRestartPolicy, ContainerRestartRules).

// Limits of ContainerRestartRules.
const (
	maxRestartPolicyRules   = 20
	maxRestartRuleExitCodes = 255
)

// podLevelResources checks spec.resources at path (the spec's path).
func podLevelResources(errs *Errs, path string, s *v1.PodSpec) {
	r := s.GetResources()
	if r == nil {
		return
	}
	rp := path + ".resources"
	if len(r.Claims) > 0 {
		errs.Add(rp+".claims", "Forbidden: claims may not be set for Resources at pod-level")
	}
	limits := map[string]resource.Quantity{}
	for _, name := range sortedKeys(r.Limits) {
		fp := fmt.Sprintf("%s.limits[%s]", rp, name)
		if q, ok := podLevelQuantity(errs, fp, name, r.Limits[name]); ok {
			limits[name] = q
		}
	}
	requests := map[string]resource.Quantity{}
	for _, name := range sortedKeys(r.Requests) {
		fp := fmt.Sprintf("%s.requests[%s]", rp, name)
		q, ok := podLevelQuantity(errs, fp, name, r.Requests[name])
		if !ok {
			continue
		}
		requests[name] = q
		lim, has := limits[name]
		switch {
		case has && strings.HasPrefix(name, "hugepages-") && q.Cmp(lim) != 0:
			errs.Add(rp+".requests", "Invalid value: %q: must be equal to %s limit of %s", r.Requests[name], name, r.Limits[name])
		case has && q.Cmp(lim) > 0:
			errs.Add(rp+".requests", "Invalid value: %q: must be less than or equal to %s limit of %s", r.Requests[name], name, r.Limits[name])
		case !has && strings.HasPrefix(name, "hugepages-"):
			errs.Add(rp+".limits", "Required value: Limit must be set for non overcommitable resources")
		}
	}
	_, cpuL := limits["cpu"]
	_, memL := limits["memory"]
	_, cpuR := requests["cpu"]
	_, memR := requests["memory"]
	if !cpuL && !memL && !cpuR && !memR && (hasHugePages(limits) || hasHugePages(requests)) {
		errs.Add(rp, "Forbidden: HugePages require cpu or memory")
	}
	// validatePodResourceConsistency.
	aggReq, aggLim := resource.AggregateContainerRequests(s), resource.AggregateContainerLimits(s)
	for _, name := range sortedKeys(aggReq) {
		if req, ok := requests[name]; ok && req.Cmp(aggReq[name]) < 0 {
			errs.Add(fmt.Sprintf("%s.requests[%s]", rp, name), "Invalid value: %q: must be greater than or equal to aggregate container requests of %s",
				r.Requests[name], quota.Format(name, aggReq[name]))
		}
	}
	for _, name := range sortedKeys(aggLim) {
		if lim, ok := limits[name]; ok && strings.HasPrefix(name, "hugepages-") && lim.Cmp(aggLim[name]) < 0 {
			errs.Add(fmt.Sprintf("%s.limits[%s]", rp, name), "Invalid value: %q: must be greater than or equal to aggregate container limits of %s",
				r.Limits[name], quota.Format(name, aggLim[name]))
		}
	}
	for i, c := range s.GetContainers() {
		cl := c.GetResources().GetLimits()
		for _, name := range sortedKeys(cl) {
			podLim, ok := limits[name]
			if !ok {
				continue
			}
			q, err := resource.Parse(cl[name])
			if err == nil && q.Cmp(podLim) > 0 {
				// Kubernetes builds this path from the pod-level one.
				errs.Add(fmt.Sprintf("%s.containers[%d][%s].limits", rp, i, name), "Invalid value: %q: must be less than or equal to pod limits of %s",
					cl[name], r.Limits[name])
			}
		}
	}
}

// podLevelQuantity checks one pod-level resource name and amount.
func podLevelQuantity(errs *Errs, path, name, v string) (resource.Quantity, bool) {
	if !resource.IsSupportedPodLevelResource(name) {
		if !standardResourceNames[name] && !strings.Contains(name, "/") {
			errs.Add(path, "Invalid value: %q: must be a standard resource type or fully qualified", name)
			return resource.Quantity{}, false
		}
		errs.Add(path, "Unsupported value: %q: supported values: \"cpu\", \"hugepages-\", \"memory\"", name)
		return resource.Quantity{}, false
	}
	q, err := resource.Parse(v)
	if _, perr := resource.Parse(strings.TrimPrefix(v, "-")); err != nil && strings.HasPrefix(v, "-") && perr == nil {
		errs.Add(path, "Invalid value: %q: must be greater than or equal to 0", v)
		return resource.Quantity{}, false
	}
	if err != nil {
		errs.Add(path, "Invalid value: %q: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'", v)
		return resource.Quantity{}, false
	}
	if q.Cmp(resource.Quantity{}) < 0 {
		errs.Add(path, "Invalid value: %q: must be greater than or equal to 0", v)
		return resource.Quantity{}, false
	}
	return q, true
}

// standardResourceNames are Kubernetes' standard resource names
// (IsStandardResourceName) that are not pod-level resources.
var standardResourceNames = map[string]bool{
	"ephemeral-storage": true, "requests.cpu": true, "requests.memory": true, "requests.ephemeral-storage": true,
	"limits.cpu": true, "limits.memory": true, "limits.ephemeral-storage": true, "pods": true, "resourcequotas": true,
	"services": true, "replicationcontrollers": true, "secrets": true, "configmaps": true, "persistentvolumeclaims": true,
	"storage": true, "requests.storage": true, "services.nodeports": true, "services.loadbalancers": true,
}

func hasHugePages(m map[string]resource.Quantity) bool {
	for k := range m {
		if strings.HasPrefix(k, "hugepages-") {
			return true
		}
	}
	return false
}

// hostUsers is Kubernetes' validateHostUsers: a pod in its own user
// namespace (hostUsers false) may not share the node's network (nor, in
// Kubernetes, its PID or IPC namespace, which Tugboat has no fields for).
func hostUsers(errs *Errs, path string, s *v1.PodSpec) {
	if s.HostUsers == nil || s.GetHostUsers() {
		return
	}
	if s.HostNetwork {
		errs.Add(path+".hostNetwork", "Forbidden: when `pod.Spec.HostUsers` is false")
	}
}

// containerRestartPolicy is Kubernetes' validateContainerRestartPolicy for
// a container of kind at path: its own restartPolicy (Always, OnFailure or
// Never; on an init container Always makes it a sidecar) and its
// restartPolicyRules.
func containerRestartPolicy(errs *Errs, path string, c *v1.Container) {
	if c.RestartPolicy == "" {
		if len(c.RestartPolicyRules) > 0 {
			errs.Add(path+".restartPolicy", "Required value: must specify restartPolicy when restart rules are used")
		}
	} else if !slices.Contains([]string{"Always", "OnFailure", "Never"}, c.RestartPolicy) {
		errs.Add(path+".restartPolicy", "Unsupported value: %q: supported values: \"Always\", \"OnFailure\", \"Never\"", c.RestartPolicy)
	}
	rp := path + ".restartPolicyRules"
	if n := len(c.RestartPolicyRules); n > maxRestartPolicyRules {
		errs.Add(rp, "Too many: %d: must have at most %d items", n, maxRestartPolicyRules)
	}
	for i, r := range c.RestartPolicyRules {
		p := fmt.Sprintf("%s[%d]", rp, i)
		if r.GetAction() != "Restart" {
			errs.Add(p+".action", "Unsupported value: %q: supported values: \"Restart\"", r.GetAction())
		}
		e := r.GetExitCodes()
		if e == nil {
			errs.Add(p+".exitCodes", "Required value: must be specified")
			continue
		}
		if e.Operator != "In" && e.Operator != "NotIn" {
			errs.Add(p+".exitCodes.operator", "Unsupported value: %q: supported values: \"In\", \"NotIn\"", e.Operator)
		}
		if n := len(e.Values); n > maxRestartRuleExitCodes {
			errs.Add(p+".exitCodes.values", "Too many: %d: must have at most %d items", n, maxRestartRuleExitCodes)
		}
	}
}
