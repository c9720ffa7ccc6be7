package endpoints

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Subsets computes a Service's endpoint subsets from the pods its selector
// matches (pure). A pod counts once it has an IP, is neither finished nor
// being deleted; it is an address if Ready, a not-ready address otherwise.
// With publishNotReadyAddresses every such pod is an address, and so is a
// pod being deleted (as Kubernetes' endpoints controller does: a
// StatefulSet's peers keep finding each other).
// Each service port's targetPort is resolved per pod: a number is used as
// is, a name is looked up among the pod's container ports of the same
// protocol; a pod lacking a named port is left out of that port, and out
// of the Service if it resolves none of its ports. Pods resolving to the
// same ports share a subset. Output is sorted, so equal inputs give equal
// objects (the controller writes only on a difference).
func Subsets(svc *v1.Service, pods []*v1.Pod) []*v1.EndpointSubset {
	type group struct {
		ports    []*v1.EndpointPort
		ready    []*v1.EndpointAddress
		notReady []*v1.EndpointAddress
	}
	groups := map[string]*group{}
	svcPorts := svc.GetSpec().GetPorts()
	publishAll := svc.GetSpec().GetPublishNotReadyAddresses()
	for _, pod := range pods {
		if pod.GetStatus().GetPodIp() == "" || !(controller.IsPodActive(pod) || publishAll && !controller.IsPodFinished(pod)) {
			continue
		}
		ports := make([]*v1.EndpointPort, 0, len(svcPorts))
		for _, sp := range svcPorts {
			if port, ok := resolvePort(pod, sp); ok {
				ports = append(ports, &v1.EndpointPort{Name: sp.GetName(), Port: port, Protocol: protocol(sp.GetProtocol())})
			}
		}
		if len(svcPorts) > 0 && len(ports) == 0 {
			continue
		}
		slices.SortFunc(ports, func(a, b *v1.EndpointPort) int {
			return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), strings.Compare(a.Protocol, b.Protocol))
		})
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &group{ports: ports}
			groups[key] = g
		}
		addr := address(svc, pod)
		if publishAll || controller.IsPodReady(pod) {
			g.ready = append(g.ready, addr)
		} else {
			g.notReady = append(g.notReady, addr)
		}
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]*v1.EndpointSubset, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		sortAddresses(g.ready)
		sortAddresses(g.notReady)
		out = append(out, &v1.EndpointSubset{Addresses: g.ready, NotReadyAddresses: g.notReady, Ports: g.ports})
	}
	return out
}

func protocol(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}

// resolvePort finds the port a pod serves a service port on.
func resolvePort(pod *v1.Pod, sp *v1.ServicePort) (int32, bool) {
	target := sp.GetTargetPort()
	if target == "" {
		return sp.GetPort(), sp.GetPort() > 0
	}
	if n, err := strconv.Atoi(target); err == nil {
		return int32(n), n > 0 && n <= 65535
	}
	proto := protocol(sp.GetProtocol())
	for _, c := range pod.GetSpec().GetContainers() {
		for _, cp := range c.GetPorts() {
			if cp.GetName() == target && protocol(cp.GetProtocol()) == proto {
				return cp.GetContainerPort(), cp.GetContainerPort() > 0
			}
		}
	}
	return 0, false
}

func address(svc *v1.Service, pod *v1.Pod) *v1.EndpointAddress {
	m := pod.GetMetadata()
	a := &v1.EndpointAddress{Ip: pod.GetStatus().GetPodIp(), NodeName: pod.GetSpec().GetNodeName(),
		TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid()}}
	// A pod that names the Service as its subdomain gets a DNS name under it.
	if h := pod.GetSpec().GetHostname(); h != "" && pod.GetSpec().GetSubdomain() == svc.GetMetadata().GetName() {
		a.Hostname = h
	}
	return a
}

func portsKey(ports []*v1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		fmt.Fprintf(&b, "%s/%d/%s,", p.Name, p.Port, p.Protocol)
	}
	return b.String()
}

func sortAddresses(list []*v1.EndpointAddress) {
	slices.SortFunc(list, func(a, b *v1.EndpointAddress) int {
		return cmp.Or(strings.Compare(a.Ip, b.Ip), strings.Compare(a.GetTargetRef().GetName(), b.GetTargetRef().GetName()))
	})
}
