package endpoints

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Labels and values of the slices this package writes, Kubernetes' own.
const (
	// LabelServiceName names a slice's Service.
	LabelServiceName = "kubernetes.io/service-name"
	// LabelManagedBy names the controller that writes a slice.
	LabelManagedBy = "endpointslice.kubernetes.io/managed-by"
	// ManagedBySlices marks slices made from a Service's pods.
	ManagedBySlices = "endpointslice-controller.k8s.io"
	// ManagedByMirroring marks slices mirrored from the Endpoints of a
	// Service without a selector.
	ManagedByMirroring = "endpointslicemirroring-controller.k8s.io"
	// LabelZone is the node label copied into an endpoint's zone.
	LabelZone = "topology.kubernetes.io/zone"
	// MaxEndpointsPerSlice is how many endpoints the controller puts in
	// one slice (Kubernetes' --max-endpoints-per-slice default).
	MaxEndpointsPerSlice = 100
)

// endpointGroup is the endpoints of a Service that share one set of ports.
type endpointGroup struct {
	ports     []*v1.EndpointSlicePort
	endpoints map[string]*v1.Endpoint // address -> endpoint
}

// PodEndpoints computes the endpoints of a Service from the pods its
// selector matches (pure), grouped by resolved ports (key: portsKey).
// Unlike Subsets it keeps pods being deleted, as Kubernetes' slices do:
// terminating, serving while still Ready, never ready (but with
// publishNotReadyAddresses, where every endpoint is ready). zoneOf gives
// a node's zone label ("" if none).
func PodEndpoints(svc *v1.Service, pods []*v1.Pod, zoneOf func(node string) string) map[string]*endpointGroup {
	groups := map[string]*endpointGroup{}
	svcPorts := svc.GetSpec().GetPorts()
	publishAll := svc.GetSpec().GetPublishNotReadyAddresses()
	for _, pod := range pods {
		if pod.GetStatus().GetPodIp() == "" || controller.IsPodFinished(pod) {
			continue
		}
		var ports []*v1.EndpointSlicePort
		for _, sp := range svcPorts {
			if port, ok := resolvePort(pod, sp); ok {
				p := &v1.EndpointSlicePort{Name: proto.String(sp.GetName()), Port: proto.Int32(port), Protocol: proto.String(protocol(sp.GetProtocol()))}
				if sp.GetAppProtocol() != "" {
					p.AppProtocol = proto.String(sp.GetAppProtocol())
				}
				ports = append(ports, p)
			}
		}
		if len(svcPorts) > 0 && len(ports) == 0 {
			continue
		}
		sortSlicePorts(ports)
		terminating := pod.GetMetadata().GetDeletionTimestamp() != nil
		serving := controller.IsPodReady(pod)
		m := pod.GetMetadata()
		e := &v1.Endpoint{
			Addresses: []string{pod.GetStatus().GetPodIp()},
			Conditions: &v1.EndpointConditions{Ready: proto.Bool(publishAll || serving && !terminating),
				Serving: proto.Bool(publishAll || serving), Terminating: proto.Bool(terminating)},
			TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()},
		}
		if n := pod.GetSpec().GetNodeName(); n != "" {
			e.NodeName = proto.String(n)
			if z := zoneOf(n); z != "" {
				e.Zone = proto.String(z)
			}
		}
		if h := pod.GetSpec().GetHostname(); h != "" && pod.GetSpec().GetSubdomain() == svc.GetMetadata().GetName() {
			e.Hostname = proto.String(h)
		}
		addEndpoint(groups, ports, e)
	}
	return groups
}

// MirroredEndpoints turns the Endpoints of a Service without a selector
// (the user's) into slice endpoints (pure), as Kubernetes' mirroring
// controller does: addresses ready, not-ready addresses not.
func MirroredEndpoints(eps *v1.Endpoints) map[string]*endpointGroup {
	groups := map[string]*endpointGroup{}
	for _, ss := range eps.GetSubsets() {
		var ports []*v1.EndpointSlicePort
		for _, p := range ss.GetPorts() {
			ports = append(ports, &v1.EndpointSlicePort{Name: proto.String(p.GetName()), Port: proto.Int32(p.GetPort()), Protocol: proto.String(protocol(p.GetProtocol()))})
		}
		sortSlicePorts(ports)
		add := func(a *v1.EndpointAddress, ready bool) {
			e := &v1.Endpoint{Addresses: []string{a.GetIp()}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(ready)}}
			if a.GetHostname() != "" {
				e.Hostname = proto.String(a.GetHostname())
			}
			if a.GetNodeName() != "" {
				e.NodeName = proto.String(a.GetNodeName())
			}
			if a.GetTargetRef() != nil {
				e.TargetRef = proto.Clone(a.GetTargetRef()).(*v1.ObjectReference)
			}
			addEndpoint(groups, ports, e)
		}
		for _, a := range ss.GetAddresses() {
			add(a, true)
		}
		for _, a := range ss.GetNotReadyAddresses() {
			add(a, false)
		}
	}
	return groups
}

func addEndpoint(groups map[string]*endpointGroup, ports []*v1.EndpointSlicePort, e *v1.Endpoint) {
	key := slicePortsKey(ports)
	g := groups[key]
	if g == nil {
		g = &endpointGroup{ports: ports, endpoints: map[string]*v1.Endpoint{}}
		groups[key] = g
	}
	g.endpoints[e.Addresses[0]] = e
}

func sortSlicePorts(ports []*v1.EndpointSlicePort) {
	slices.SortFunc(ports, func(a, b *v1.EndpointSlicePort) int {
		return cmp.Or(strings.Compare(a.GetName(), b.GetName()), cmp.Compare(a.GetPort(), b.GetPort()), strings.Compare(a.GetProtocol(), b.GetProtocol()))
	})
}

func slicePortsKey(ports []*v1.EndpointSlicePort) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.GetName() + "/" + p.GetProtocol() + "/" + strconv.Itoa(int(p.GetPort())) + ",")
	}
	return b.String()
}

// SlicePlan is what to write to make a Service's slices right.
type SlicePlan struct {
	Create []*v1.EndpointSlice // without names: the apiserver generates them
	Update []*v1.EndpointSlice // copies of existing slices, changed
	Delete []*v1.EndpointSlice // existing slices
}

// PlanSlices reconciles a Service's existing slices with the endpoints it
// should have (pure). It moves as little as it can, as Kubernetes does:
// an endpoint stays in the slice that has it while that slice's ports are
// still its ports; new endpoints fill the slices that have room, then new
// slices of at most max endpoints; a slice left empty is deleted, except
// that a Service with no endpoints keeps one empty slice (Kubernetes'
// placeholder). template gives new slices their metadata (labels, owner,
// generateName). Endpoints inside a slice are sorted by address.
func PlanSlices(existing []*v1.EndpointSlice, groups map[string]*endpointGroup, max int, template func() *v1.ObjectMeta) SlicePlan {
	var plan SlicePlan
	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *v1.EndpointSlice) int {
		return strings.Compare(a.GetMetadata().GetName(), b.GetMetadata().GetName())
	})
	if len(groups) == 0 {
		// The placeholder: one slice with no ports and no endpoints.
		groups = map[string]*endpointGroup{"": {endpoints: map[string]*v1.Endpoint{}}}
	}
	byPorts := map[string][]*v1.EndpointSlice{}
	for _, s := range existing {
		k := slicePortsKey(s.GetPorts())
		if _, ok := groups[k]; !ok {
			plan.Delete = append(plan.Delete, s)
			continue
		}
		byPorts[k] = append(byPorts[k], s)
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		g := groups[k]
		placed := map[string]bool{}
		type work struct {
			old  *v1.EndpointSlice // nil: a new slice
			list []*v1.Endpoint
		}
		var ws []*work
		for _, s := range byPorts[k] {
			w := &work{old: s}
			for _, e := range s.GetEndpoints() {
				addr := firstAddress(e)
				if want, ok := g.endpoints[addr]; ok && !placed[addr] && len(w.list) < max {
					w.list = append(w.list, want)
					placed[addr] = true
				}
			}
			ws = append(ws, w)
		}
		var rest []string
		for addr := range g.endpoints {
			if !placed[addr] {
				rest = append(rest, addr)
			}
		}
		slices.Sort(rest)
		for _, w := range ws {
			for len(rest) > 0 && len(w.list) < max {
				w.list = append(w.list, g.endpoints[rest[0]])
				rest = rest[1:]
			}
		}
		for len(rest) > 0 {
			n := min(max, len(rest))
			w := &work{}
			for _, addr := range rest[:n] {
				w.list = append(w.list, g.endpoints[addr])
			}
			rest = rest[n:]
			ws = append(ws, w)
		}
		kept := 0
		for _, w := range ws {
			if len(w.list) == 0 && (len(g.endpoints) > 0 || kept > 0) {
				if w.old != nil {
					plan.Delete = append(plan.Delete, w.old)
				}
				continue
			}
			kept++
			slices.SortFunc(w.list, func(a, b *v1.Endpoint) int { return strings.Compare(firstAddress(a), firstAddress(b)) })
			if w.old == nil {
				plan.Create = append(plan.Create, &v1.EndpointSlice{Metadata: template(), AddressType: "IPv4",
					Endpoints: cloneEndpoints(w.list), Ports: clonePorts(g.ports)})
				continue
			}
			labels := template().GetLabels()
			if slices.EqualFunc(w.old.GetEndpoints(), w.list, func(a, b *v1.Endpoint) bool { return proto.Equal(a, b) }) &&
				maps.Equal(w.old.GetMetadata().GetLabels(), labels) {
				continue
			}
			next := proto.Clone(w.old).(*v1.EndpointSlice)
			next.Endpoints = cloneEndpoints(w.list)
			next.Metadata.Labels = labels
			plan.Update = append(plan.Update, next)
		}
		if kept == 0 { // a group with no endpoint and no slice yet: the placeholder
			plan.Create = append(plan.Create, &v1.EndpointSlice{Metadata: template(), AddressType: "IPv4", Ports: clonePorts(g.ports)})
		}
	}
	return plan
}

func firstAddress(e *v1.Endpoint) string {
	if len(e.GetAddresses()) == 0 {
		return ""
	}
	return e.GetAddresses()[0]
}

func cloneEndpoints(list []*v1.Endpoint) []*v1.Endpoint {
	out := make([]*v1.Endpoint, len(list))
	for i, e := range list {
		out[i] = proto.Clone(e).(*v1.Endpoint)
	}
	return out
}

func clonePorts(list []*v1.EndpointSlicePort) []*v1.EndpointSlicePort {
	if len(list) == 0 {
		return nil
	}
	out := make([]*v1.EndpointSlicePort, len(list))
	for i, p := range list {
		out[i] = proto.Clone(p).(*v1.EndpointSlicePort)
	}
	return out
}
