// Package framework is the scheduler's vocabulary: what it needs to know of
// a pod (PodInfo, computed once per pod version) and of a node (NodeInfo:
// the node's fixed facts plus what the pods bound or assumed there use), the
// Filter and Score plugin contracts, and the Pipeline that runs the plugins
// to pick one node for one pod.
//
// Contract: PodInfo and Node are immutable once built and may be shared
// between goroutines; a NodeInfo is owned by whoever holds it (the cache
// under its lock, or one scheduling goroutine's snapshot). Plugins never
// allocate on the success path and never mutate what they are given.
package framework

import (
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Default requests used for scoring pods that request nothing, so that a
// node full of request-less pods does not look empty (kube-scheduler's
// values).
const (
	DefaultMilliCPURequest = 100               // 0.1 core
	DefaultMemoryRequest   = 200 * 1024 * 1024 // 200 MiB
)

// Resources is an amount of the resources the scheduler accounts for.
type Resources struct {
	MilliCPU         int64
	Memory           int64 // bytes
	EphemeralStorage int64 // bytes
}

// Add adds o to r.
func (r *Resources) Add(o Resources) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
}

// Sub subtracts o from r.
func (r *Resources) Sub(o Resources) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
}

// HostPort is one host port a pod binds. IP is "0.0.0.0" for every address.
type HostPort struct {
	IP       string
	Protocol string
	Port     int32
}

// Conflicts reports whether two host ports cannot both be bound on a node.
func (p HostPort) Conflicts(o HostPort) bool {
	if p.Port != o.Port || p.Protocol != o.Protocol {
		return false
	}
	return p.IP == o.IP || p.IP == anyIP || o.IP == anyIP
}

const anyIP = "0.0.0.0"

// PodInfo is what the scheduler needs from a pod, computed once.
type PodInfo struct {
	Pod *v1.Pod // shared with the informer: read only
	Key string  // "namespace/name"
	UID string
	// Request is what the pod asks for: the sum over its containers, or the
	// largest init container if that is more (they run one at a time);
	// its pod-level cpu and memory requests instead when it sets them.
	Request Resources
	// NonZeroRequest is Request with defaults for cpu and memory left at
	// zero: what scores count.
	NonZeroRequest Resources
	Ports          []HostPort
	// Owner is the UID of the pod's controller (ReplicaSet, ...), "" if none.
	Owner       string
	Tolerations []*v1.Toleration
	// NodeSelector is spec.nodeSelector as a selector (empty: any node).
	NodeSelector labels.Selector
	// Affinity is the required node affinity: terms ORed, each term's
	// requirements ANDed. Nil means no affinity.
	Affinity []labels.NodeSelectorTerm
	// AffinityErr is set when the pod's affinity cannot be understood; the
	// pod then fits no node.
	AffinityErr error
	// PreferredAffinity are the preferred node affinity terms: a node
	// matching a term scores its weight.
	PreferredAffinity []WeightedNodeTerm
	// Volumes are the constraints of the pod's PersistentVolumeClaims, set
	// for each decision from the scheduler's volume caches (nil: none).
	Volumes *VolumeInfo
	// Claims, set for each decision from the scheduler's ResourceClaim
	// cache, refuses every node with its reason (a claim missing, not
	// allocated, or allocated but unusable: no DRA driver runs); nil when
	// the pod uses no claims.
	Claims *Status
	// Priority is spec.priority; StartTime status.startTime (or the
	// creation time) in Unix nanoseconds: what preemption orders by.
	Priority  int32
	StartTime int64
	// Namespace and Labels are the pod's (Labels shared with the pod).
	Namespace string
	Labels    map[string]string
	// PodAffinity is the pod's compiled pod affinity and anti-affinity
	// (nil: none).
	PodAffinity *PodAffinity
	// Spread are its topology spread constraints.
	Spread []SpreadConstraint
	// Topology is set for each decision by the cache (Cache.Topology):
	// where the pods its affinity and spread look at run. Nil: nothing
	// to look at.
	Topology *TopologyState
}

// VolumeInfo is what a pod's claims ask of a node.
type VolumeInfo struct {
	// Unschedulable, if set, refuses every node (a claim missing, being
	// deleted, or unbound with Immediate binding) with this reason.
	Unschedulable *Status
	// Bound are the node affinities of the volumes bound to its claims:
	// a node must match each.
	Bound [][]labels.NodeSelectorTerm
	// Waiting are its unbound WaitForFirstConsumer claims, by key; for
	// each, the node affinities of the volumes that could serve it (nil:
	// a provisioner can make one on any node).
	Waiting map[string][][]labels.NodeSelectorTerm
}

// WeightedNodeTerm is a compiled preferred node affinity term.
type WeightedNodeTerm struct {
	Weight int64
	Term   labels.NodeSelectorTerm
}

// NewPodInfo computes a pod's scheduling facts.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Key: v1.Key(pod), UID: pod.GetMetadata().GetUid(),
		Namespace: pod.GetMetadata().GetNamespace(), Labels: pod.GetMetadata().GetLabels(), Priority: pod.GetSpec().GetPriority()}
	if t := pod.GetStatus().GetStartTime(); t != nil {
		pi.StartTime = t.AsTime().UnixNano()
	} else if t := pod.GetMetadata().GetCreationTimestamp(); t != nil {
		pi.StartTime = t.AsTime().UnixNano()
	}
	spec := pod.GetSpec()
	var sum Resources
	statuses := map[string]*v1.ContainerStatus{}
	for _, cs := range pod.GetStatus().GetContainerStatuses() {
		statuses[cs.GetName()] = cs
	}
	for _, c := range spec.GetContainers() {
		sum.Add(resizedRequest(containerRequest(c), statuses[c.GetName()]))
		for _, p := range c.Ports {
			if hp := hostPort(p, spec.GetHostNetwork()); hp.Port > 0 {
				pi.Ports = append(pi.Ports, hp)
			}
		}
	}
	for _, c := range spec.GetInitContainers() {
		r := containerRequest(c)
		sum.MilliCPU = max(sum.MilliCPU, r.MilliCPU)
		sum.Memory = max(sum.Memory, r.Memory)
		sum.EphemeralStorage = max(sum.EphemeralStorage, r.EphemeralStorage)
	}
	// Pod-level requests (spec.resources) replace the containers' sum for
	// cpu and memory (Kubernetes' PodRequests with PodLevelResources);
	// ephemeral storage stays the containers'.
	if r := spec.GetResources(); r != nil {
		pod := func(name string) (string, bool) {
			if v, ok := r.GetRequests()[name]; ok {
				return v, true
			}
			v, ok := r.GetLimits()[name]
			return v, ok
		}
		if v, ok := pod("cpu"); ok {
			sum.MilliCPU = quantity(v, true)
		}
		if v, ok := pod("memory"); ok {
			sum.Memory = quantity(v, false)
		}
	}
	pi.Request = sum
	pi.NonZeroRequest = sum
	if pi.NonZeroRequest.MilliCPU == 0 {
		pi.NonZeroRequest.MilliCPU = DefaultMilliCPURequest
	}
	if pi.NonZeroRequest.Memory == 0 {
		pi.NonZeroRequest.Memory = DefaultMemoryRequest
	}
	for _, ref := range pod.GetMetadata().GetOwnerReferences() {
		if ref.Controller {
			pi.Owner = ref.Uid
			break
		}
	}
	pi.Tolerations = spec.GetTolerations()
	if len(spec.GetNodeSelector()) > 0 {
		pi.NodeSelector = labels.SelectorFromSet(spec.GetNodeSelector())
	}
	if req := spec.GetAffinity().GetNodeAffinity().GetRequiredDuringSchedulingIgnoredDuringExecution(); req != nil {
		pi.Affinity, pi.AffinityErr = labels.CompileNodeSelector(req, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution")
	}
	var err error
	if pi.PodAffinity, err = compileAffinity(pi.Namespace, spec.GetAffinity()); err != nil && pi.AffinityErr == nil {
		pi.AffinityErr = err // validated when stored: cannot happen
	}
	if pi.Spread, err = compileSpread(pod); err != nil && pi.AffinityErr == nil {
		pi.AffinityErr = err
	}
	for _, p := range spec.GetAffinity().GetNodeAffinity().GetPreferredDuringSchedulingIgnoredDuringExecution() {
		if p.GetWeight() == 0 || p.GetPreference() == nil {
			continue
		}
		terms, err := labels.CompileNodeSelector(&v1.NodeSelector{NodeSelectorTerms: []*v1.NodeSelectorTerm{p.Preference}}, "preference")
		if err != nil || len(terms) != 1 || len(terms[0]) == 0 {
			continue // validated when stored; an empty preference is a no-op, as in Kubernetes
		}
		pi.PreferredAffinity = append(pi.PreferredAffinity, WeightedNodeTerm{Weight: int64(p.Weight), Term: terms[0]})
	}
	return pi
}

// containerRequest is a container's requests, falling back to its limits
// for a resource it does not request (as Kubernetes defaults them).
func containerRequest(c *v1.Container) Resources {
	get := func(name string) string {
		if v, ok := c.GetResources().GetRequests()[name]; ok {
			return v
		}
		return c.GetResources().GetLimits()[name]
	}
	return Resources{
		MilliCPU:         quantity(get("cpu"), true),
		Memory:           quantity(get("memory"), false),
		EphemeralStorage: quantity(get("ephemeral-storage"), false),
	}
}

// resizedRequest is what a container of a resized pod holds on its node
// (Kubernetes' accounting for in-place resize): the larger of what its
// spec asks, what the kubelet allocated it and what it runs with, per
// resource, so neither a pending raise nor a lowering the kubelet has not
// applied yet lets the scheduler overcommit the node.
func resizedRequest(r Resources, cs *v1.ContainerStatus) Resources {
	if cs == nil {
		return r
	}
	for _, m := range []map[string]string{cs.GetAllocatedResources(), cs.GetResources().GetRequests()} {
		r.MilliCPU = max(r.MilliCPU, quantity(m["cpu"], true))
		r.Memory = max(r.Memory, quantity(m["memory"], false))
	}
	return r
}

// StorageBytes parses a storage size ("1Gi"), 0 if it cannot.
func StorageBytes(s string) int64 { return quantity(s, false) }

// quantity parses a validated quantity; an empty or bad one counts as 0
// (the apiserver has validated requests, so a bad one cannot be stored).
func quantity(s string, milli bool) int64 {
	if s == "" {
		return 0
	}
	q, err := resource.Parse(s)
	if err != nil {
		return 0
	}
	if milli {
		return q.MilliValue()
	}
	return q.Value()
}

func hostPort(p *v1.ContainerPort, hostNetwork bool) HostPort {
	port := p.HostPort
	if port == 0 && hostNetwork {
		port = p.ContainerPort // a host-network pod binds its container ports on the host
	}
	hp := HostPort{IP: p.HostIp, Protocol: p.Protocol, Port: port}
	if hp.IP == "" {
		hp.IP = anyIP
	}
	if hp.Protocol == "" {
		hp.Protocol = "TCP"
	}
	return hp
}
