// Package quota is what the ResourceQuota admission (apiserver) and the
// quota controller (controllers/resourcequota) share, so that a charge at
// admission and a recount agree: the resource names a quota may limit,
// what one object uses of them, and sums, masks and comparisons over lists
// of quantities, formatted as Kubernetes prints them.
//
// Names served (Kubernetes'): compute — cpu, memory, ephemeral-storage
// (requests), requests.cpu, requests.memory, requests.ephemeral-storage,
// limits.cpu, limits.memory, limits.ephemeral-storage; storage —
// requests.storage, persistentvolumeclaims; object counts — pods,
// services, services.nodeports, services.loadbalancers, configmaps,
// secrets, resourcequotas, and count/<resource>[.<group>] of any
// namespaced kind. Anything else (scopes, per-class storage, extended
// resources) is refused by validation, not accepted and ignored.
//
// A pod in phase Succeeded or Failed uses nothing (its resources are
// free), as in Kubernetes.
package quota

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// List is quantities by resource name.
type List map[string]resource.Quantity

// computeNames are the names a pod's containers use; validationNames are
// those every container must request (or limit) when a quota holds them
// (Kubernetes' backward-compatible rule for cpu and memory).
var (
	computeNames = []string{"cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
		"limits.cpu", "limits.memory", "limits.ephemeral-storage"}
	validationNames = []string{"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
	// byKind are the names (besides count/...) each kind's objects use.
	byKind = map[string][]string{
		"Pod":                   append([]string{"pods"}, computeNames...),
		"Service":               {"services", "services.nodeports", "services.loadbalancers"},
		"ConfigMap":             {"configmaps"},
		"Secret":                {"secrets"},
		"PersistentVolumeClaim": {"persistentvolumeclaims", "requests.storage"},
		"ResourceQuota":         {"resourcequotas"},
	}
)

// CountName is the object-count name of a kind, by its group resource
// (kinds.Kind.GroupResource): count/pods, count/deployments.apps.
func CountName(groupResource string) string { return "count/" + groupResource }

// KindOf says whose objects a name measures: a kind name for the names of
// byKind ("Pod" for requests.cpu), or the group resource a count/ name
// counts ("deployments.apps"); both empty for a name not served.
func KindOf(name string) (kind, groupResource string) {
	if rest, ok := strings.CutPrefix(name, "count/"); ok {
		return "", rest
	}
	for kind, names := range byKind {
		if slices.Contains(names, name) {
			return kind, ""
		}
	}
	return "", ""
}

// ValidateName says why a quota may not hold name (nil if it may); that
// the resource of a count/ name exists is the caller's to check (it knows
// the kinds).
func ValidateName(name string) error {
	if rest, ok := strings.CutPrefix(name, "count/"); ok {
		if rest == "" || strings.ContainsAny(rest, "/ ") {
			return fmt.Errorf("%q: use count/<resource>.<group>, as count/deployments.apps, or count/<resource> for the core group", name)
		}
		return nil
	}
	if kind, _ := KindOf(name); kind != "" {
		return nil
	}
	return fmt.Errorf("resource %q is not supported in a quota: use cpu, memory, ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage, limits.cpu, limits.memory, limits.ephemeral-storage, requests.storage, pods, services, services.nodeports, services.loadbalancers, configmaps, secrets, persistentvolumeclaims, resourcequotas or count/<resource>.<group>", name)
}

// IsInteger reports names whose quantities are counts (whole numbers).
func IsInteger(name string) bool {
	if strings.HasPrefix(name, "count/") {
		return true
	}
	switch name {
	case "pods", "services", "services.nodeports", "services.loadbalancers", "configmaps", "secrets", "persistentvolumeclaims", "resourcequotas":
		return true
	}
	return false
}

// Matching is the names of hard that objects of a kind (by name and group
// resource) use: a quota applies to an object when this is not empty.
func Matching(kind, groupResource string, hard map[string]string) []string {
	var out []string
	for name := range hard {
		if name == CountName(groupResource) || slices.Contains(byKind[kind], name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Terminal reports a pod that has finished and so uses nothing.
func Terminal(p *v1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

// Usage is what obj (whose kind has groupResource) uses of every name it
// can use.
func Usage(groupResource string, obj v1.Object) List {
	out := List{}
	one := resource.New(1)
	out[CountName(groupResource)] = one
	switch o := obj.(type) {
	case *v1.Pod:
		if Terminal(o) {
			return List{CountName(groupResource): {}, "pods": {}}
		}
		out["pods"] = one
		req, lim := PodRequests(o.GetSpec())
		for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
			out[r] = req[r]
			out["requests."+r] = req[r]
			out["limits."+r] = lim[r]
		}
	case *v1.Service:
		out["services"] = one
		s := o.GetSpec()
		nodePorts := int64(0)
		switch s.GetType() {
		case "NodePort":
			nodePorts = int64(len(s.GetPorts()))
		case "LoadBalancer":
			out["services.loadbalancers"] = one
			if s.AllocateLoadBalancerNodePorts == nil || s.GetAllocateLoadBalancerNodePorts() {
				nodePorts = int64(len(s.GetPorts()))
			}
		}
		out["services.nodeports"] = resource.New(nodePorts)
		if _, ok := out["services.loadbalancers"]; !ok {
			out["services.loadbalancers"] = resource.Quantity{}
		}
	case *v1.ConfigMap:
		out["configmaps"] = one
	case *v1.Secret:
		out["secrets"] = one
	case *v1.PersistentVolumeClaim:
		out["persistentvolumeclaims"] = one
		q, _ := resource.Parse(o.GetSpec().GetResources().GetRequests()["storage"])
		out["requests.storage"] = q
	case *v1.ResourceQuota:
		out["resourcequotas"] = one
	}
	return out
}

// PodRequests is a pod's effective requests and limits (Kubernetes'
// PodRequests and PodLimits): its containers' aggregate
// (resource.AggregateContainerRequests: the app containers and sidecars
// together, or a regular init container with the sidecars before it if
// that is more), with the pod-level requests and limits (spec.resources)
// in place of the aggregate for the resources they set.
func PodRequests(s *v1.PodSpec) (requests, limits List) {
	requests, limits = List(resource.AggregateContainerRequests(s)), List(resource.AggregateContainerLimits(s))
	for name, v := range s.GetResources().GetRequests() {
		if resource.IsSupportedPodLevelResource(name) {
			q, _ := resource.Parse(v)
			requests[name] = q
		}
	}
	for name, v := range s.GetResources().GetLimits() {
		if resource.IsSupportedPodLevelResource(name) {
			q, _ := resource.Parse(v)
			limits[name] = q
		}
	}
	return requests, limits
}

// Constraints is Kubernetes' rule for pods under a quota of cpu or memory:
// every container must say how much it needs of each such name the quota
// holds (restricted), else "must specify requests.cpu for: app; ...".
func Constraints(obj v1.Object, restricted []string) error {
	p, ok := obj.(*v1.Pod)
	if !ok {
		return nil
	}
	missing := map[string][]string{}
	podReq, podLim := p.GetSpec().GetResources().GetRequests(), p.GetSpec().GetResources().GetLimits()
	for _, list := range [][]*v1.Container{p.GetSpec().GetContainers(), p.GetSpec().GetInitContainers()} {
		for _, c := range list {
			req, lim := c.GetResources().GetRequests(), c.GetResources().GetLimits()
			for _, name := range restricted {
				if !slices.Contains(validationNames, name) {
					continue
				}
				// A pod-level amount says it for every container.
				if _, ok := podReq[strings.TrimPrefix(name, "requests.")]; ok && !strings.HasPrefix(name, "limits.") {
					continue
				}
				if _, ok := podLim[strings.TrimPrefix(name, "limits.")]; ok && strings.HasPrefix(name, "limits.") {
					continue
				}
				var has bool
				switch {
				case strings.HasPrefix(name, "limits."):
					_, has = lim[strings.TrimPrefix(name, "limits.")]
				default:
					_, has = req[strings.TrimPrefix(name, "requests.")]
				}
				if !has {
					missing[name] = append(missing[name], c.Name)
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	names := make([]string, 0, len(missing))
	for n := range missing {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		cs := slices.Clone(missing[n])
		sort.Strings(cs)
		parts[i] = fmt.Sprintf("%s for: %s", n, strings.Join(slices.Compact(cs), ","))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// Parse reads a list of quantity strings (a bad one counts as zero: lists
// are validated before they are stored).
func Parse(m map[string]string) List {
	out := List{}
	for k, v := range m {
		q, _ := resource.Parse(v)
		out[k] = q
	}
	return out
}

// Strings formats a list as a quota's status holds it.
func (l List) Strings() map[string]string {
	out := make(map[string]string, len(l))
	for k, q := range l {
		out[k] = Format(k, q)
	}
	return out
}

// Format prints a quantity as Kubernetes does for its resource: milli
// units when there are any ("500m"), bytes with the largest exact binary
// suffix ("512Mi") or a decimal one ("1G"), counts as integers.
func Format(name string, q resource.Quantity) string {
	if q.MilliValue()%1000 != 0 {
		return fmt.Sprintf("%dm", q.MilliValue())
	}
	v := q.MilliValue() / 1000
	if v == 0 || IsInteger(name) || strings.HasSuffix(name, "cpu") {
		return fmt.Sprint(v)
	}
	if v%1024 == 0 {
		return q.BytesString()
	}
	for _, s := range []struct {
		suf  string
		unit int64
	}{{"E", 1e18}, {"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if v%s.unit == 0 {
			return fmt.Sprintf("%d%s", v/s.unit, s.suf)
		}
	}
	return fmt.Sprint(v)
}

// Add is a + b over the names of either.
func Add(a, b List) List {
	out := List{}
	for k, q := range a {
		out[k] = q
	}
	for k, q := range b {
		out[k] = out[k].Add(q)
	}
	return out
}

// SubtractFloor is a - b over a's names, never below zero.
func SubtractFloor(a, b List) List {
	out := List{}
	for k, q := range a {
		d := q.Sub(b[k])
		if d.Cmp(resource.Quantity{}) < 0 {
			d = resource.Quantity{}
		}
		out[k] = d
	}
	return out
}

// Mask is l restricted to names.
func Mask(l List, names []string) List {
	out := List{}
	for _, n := range names {
		if q, ok := l[n]; ok {
			out[n] = q
		}
	}
	return out
}

// Exceeded is the names whose amount in l is above hard's.
func Exceeded(l, hard List) []string {
	var out []string
	for n, q := range l {
		if h, ok := hard[n]; ok && q.Cmp(h) > 0 {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// IsZero reports a list of zeros.
func IsZero(l List) bool {
	for _, q := range l {
		if !q.IsZero() {
			return false
		}
	}
	return true
}

// PrettyPrint is Kubernetes' "pods=1,requests.cpu=500m": sorted names.
func PrettyPrint(l List) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + Format(n, l[n])
	}
	return strings.Join(parts, ",")
}
