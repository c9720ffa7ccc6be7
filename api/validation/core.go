// The core group (apiVersion v1): Namespace, Node, Event, ConfigMap,
// Secret, Service, Endpoints; Pod is in core_pod.go.

package validation

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Namespace validates a namespace.
func Namespace(n *v1.Namespace) Errs {
	var errs Errs
	ObjectMeta(&errs, n.Metadata, false, DNSLabel)
	return errs
}

// Node validates a node.
func Node(n *v1.Node) Errs {
	var errs Errs
	ObjectMeta(&errs, n.Metadata, false, DNSSubdomain)
	if s := n.Spec; s != nil {
		if s.PodCidr != "" {
			if _, _, err := net.ParseCIDR(s.PodCidr); err != nil {
				errs.Add("spec.podCIDR", "%q is not a CIDR", s.PodCidr)
			}
		}
		for i, t := range s.Taints {
			p := fmt.Sprintf("spec.taints[%d]", i)
			if err := labels.ValidateKey(t.Key); err != nil {
				errs.Add(p+".key", "%v", err)
			}
			OneOf(&errs, p+".effect", t.Effect, "NoSchedule", "PreferNoSchedule", "NoExecute")
		}
	}
	return errs
}

// Event validates an event.
func Event(e *v1.Event) Errs {
	var errs Errs
	ObjectMeta(&errs, e.Metadata, true, DNSSubdomain)
	if e.InvolvedObject == nil || e.InvolvedObject.Kind == "" || e.InvolvedObject.Name == "" {
		errs.Add("involvedObject", "kind and name are required")
	}
	if e.Reason == "" {
		errs.Add("reason", "required")
	}
	if e.Type != "" {
		OneOf(&errs, "type", e.Type, "Normal", "Warning")
	}
	return errs
}

// ConfigMap validates a config map.
func ConfigMap(c *v1.ConfigMap) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, true, DNSSubdomain)
	ConfigKeys(&errs, "data", c.Data)
	ConfigKeys(&errs, "binaryData", c.BinaryData)
	for k := range c.Data {
		if _, ok := c.BinaryData[k]; ok {
			errs.Add("binaryData["+k+"]", "key is also in data")
		}
	}
	return errs
}

// Service validates a service. Tugboat is an IPv4-only cluster: IPv6
// families and RequireDualStack are refused saying so.
func Service(s *v1.Service) Errs {
	var errs Errs
	ObjectMeta(&errs, s.Metadata, true, DNSLabel)
	spec := s.Spec
	if spec == nil {
		errs.Add("spec", "required")
		return errs
	}
	OneOf(&errs, "spec.type", spec.Type, "ClusterIP", "NodePort", "LoadBalancer", "ExternalName")
	Labels(&errs, "spec.selector", spec.Selector)
	switch spec.SessionAffinity {
	case "None":
	case "ClientIP":
		errs.Add("spec.sessionAffinity", `"ClientIP" is not supported: Tugboat's proxy balances every new connection afresh (use "None")`)
	default:
		OneOf(&errs, "spec.sessionAffinity", spec.SessionAffinity, "None", "ClientIP")
	}
	serviceAddresses(&errs, spec)
	servicePolicies(&errs, spec)
	servicePorts(&errs, spec)
	return errs
}

// serviceAddresses checks the type-dependent addressing fields: clusterIP
// and clusterIPs, IP families, externalName and the load balancer's.
func serviceAddresses(errs *Errs, spec *v1.ServiceSpec) {
	external := spec.Type == "ExternalName"
	switch {
	case external && (spec.ClusterIp != "" || len(spec.ClusterIps) > 0):
		errs.Add("spec.clusterIP", "must be empty for type ExternalName (it has no cluster address)")
	case spec.ClusterIp != "" && spec.ClusterIp != "None":
		IPv4(errs, "spec.clusterIP", spec.ClusterIp)
	}
	// clusterIPs[0] must equal clusterIP: the allocator checks, knowing
	// whether one of them changed.
	if len(spec.ClusterIps) > 1 {
		errs.Add("spec.clusterIPs", "at most one address: this cluster is IPv4-only (single-stack)")
	}
	if external {
		DNSSubdomain(errs, "spec.externalName", strings.TrimSuffix(spec.ExternalName, "."))
		if len(spec.IpFamilies) > 0 {
			errs.Add("spec.ipFamilies", "must be empty for type ExternalName")
		}
		if spec.IpFamilyPolicy != "" {
			errs.Add("spec.ipFamilyPolicy", "must be empty for type ExternalName")
		}
	} else if spec.ExternalName != "" {
		errs.Add("spec.externalName", "only valid for type ExternalName")
	}
	for i, f := range spec.IpFamilies {
		p := fmt.Sprintf("spec.ipFamilies[%d]", i)
		switch {
		case f == "IPv6":
			errs.Add(p, `"IPv6" is not available: this cluster is IPv4-only (its service CIDR and pod network are IPv4)`)
		case f != "IPv4":
			OneOf(errs, p, f, "IPv4", "IPv6")
		case i > 0:
			errs.Add(p, "%q is given twice", f)
		}
	}
	switch spec.IpFamilyPolicy {
	case "", "SingleStack", "PreferDualStack":
	case "RequireDualStack":
		errs.Add("spec.ipFamilyPolicy", `"RequireDualStack" cannot be met: this cluster is IPv4-only (use SingleStack or PreferDualStack)`)
	default:
		OneOf(errs, "spec.ipFamilyPolicy", spec.IpFamilyPolicy, "SingleStack", "PreferDualStack", "RequireDualStack")
	}
	lb := spec.Type == "LoadBalancer"
	if spec.LoadBalancerIp != "" {
		if lb {
			IPv4(errs, "spec.loadBalancerIP", spec.LoadBalancerIp)
		} else {
			errs.Add("spec.loadBalancerIP", "only valid for type LoadBalancer")
		}
	}
	if spec.LoadBalancerClass != "" {
		if lb {
			QualifiedName(errs, "spec.loadBalancerClass", spec.LoadBalancerClass)
		} else {
			errs.Add("spec.loadBalancerClass", "only valid for type LoadBalancer")
		}
	}
	if spec.AllocateLoadBalancerNodePorts != nil && !lb {
		errs.Add("spec.allocateLoadBalancerNodePorts", "only valid for type LoadBalancer")
	}
}

// servicePolicies checks the traffic policies and the health check port.
func servicePolicies(errs *Errs, spec *v1.ServiceSpec) {
	externallyReachable := spec.Type == "NodePort" || spec.Type == "LoadBalancer"
	switch {
	case spec.ExternalTrafficPolicy == "":
	case !externallyReachable:
		errs.Add("spec.externalTrafficPolicy", "only valid for types NodePort and LoadBalancer")
	default:
		OneOf(errs, "spec.externalTrafficPolicy", spec.ExternalTrafficPolicy, "Cluster", "Local")
	}
	switch {
	case spec.InternalTrafficPolicy == "":
	case spec.Type == "ExternalName":
		errs.Add("spec.internalTrafficPolicy", "must be empty for type ExternalName")
	default:
		OneOf(errs, "spec.internalTrafficPolicy", spec.InternalTrafficPolicy, "Cluster", "Local")
	}
	if spec.HealthCheckNodePort != 0 {
		if spec.Type != "LoadBalancer" || spec.ExternalTrafficPolicy != "Local" {
			errs.Add("spec.healthCheckNodePort", "only valid for type LoadBalancer with externalTrafficPolicy Local")
		} else {
			Port(errs, "spec.healthCheckNodePort", spec.HealthCheckNodePort)
		}
	}
}

// servicePorts checks the ports: required but for headless and
// ExternalName Services, names unique and required when several, node
// ports only where the type has them.
func servicePorts(errs *Errs, spec *v1.ServiceSpec) {
	if len(spec.Ports) == 0 && spec.ClusterIp != "None" && spec.Type != "ExternalName" {
		errs.Add("spec.ports", "required: at least one port")
	}
	hasNodePorts := spec.Type == "NodePort" || spec.Type == "LoadBalancer"
	names := map[string]bool{}
	seen := map[string]bool{}
	nodePorts := map[int32]bool{}
	for i, p := range spec.Ports {
		pp := fmt.Sprintf("spec.ports[%d]", i)
		Port(errs, pp+".port", p.Port)
		OneOf(errs, pp+".protocol", p.Protocol, "TCP", "UDP")
		IntOrName(errs, pp+".targetPort", p.TargetPort)
		if len(spec.Ports) > 1 && p.Name == "" {
			errs.Add(pp+".name", "required when a service has more than one port")
		}
		if p.Name != "" {
			DNSLabel(errs, pp+".name", p.Name)
			if names[p.Name] {
				errs.Add(pp+".name", "%q is duplicated", p.Name)
			}
			names[p.Name] = true
		}
		if p.AppProtocol != "" {
			QualifiedName(errs, pp+".appProtocol", p.AppProtocol)
		}
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if seen[key] {
			errs.Add(pp, "port %s is duplicated", key)
		}
		seen[key] = true
		if p.NodePort != 0 {
			if !hasNodePorts {
				errs.Add(pp+".nodePort", "only valid for types NodePort and LoadBalancer")
			} else {
				// The range is the apiserver's --service-node-port-range,
				// checked where ports are allocated.
				Port(errs, pp+".nodePort", p.NodePort)
				if nodePorts[p.NodePort] {
					errs.Add(pp+".nodePort", "%d is used twice in this Service", p.NodePort)
				}
				nodePorts[p.NodePort] = true
			}
		}
	}
	if spec.ClusterIp == "None" && hasNodePorts {
		errs.Add("spec.clusterIP", `"None" (headless) is not valid for type %s: node ports need a cluster address`, spec.Type)
	}
}

// Endpoints validates endpoints.
func Endpoints(e *v1.Endpoints) Errs {
	var errs Errs
	ObjectMeta(&errs, e.Metadata, true, DNSLabel)
	for i, s := range e.Subsets {
		for j, a := range s.Addresses {
			IP(&errs, fmt.Sprintf("subsets[%d].addresses[%d].ip", i, j), a.Ip)
		}
		for j, a := range s.NotReadyAddresses {
			IP(&errs, fmt.Sprintf("subsets[%d].notReadyAddresses[%d].ip", i, j), a.Ip)
		}
		for j, p := range s.Ports {
			Port(&errs, fmt.Sprintf("subsets[%d].ports[%d].port", i, j), p.Port)
		}
	}
	return errs
}

// NodeUpdate checks what may not change in a node (old is stored): a pod
// CIDR, once set, as Kubernetes ("" to a value only), so pod routes never
// move under running pods.
func NodeUpdate(old, new *v1.Node) Errs {
	var errs Errs
	if o := old.GetSpec().GetPodCidr(); o != "" && o != new.GetSpec().GetPodCidr() {
		errs.Add("spec.podCIDR", "node updates may not change podCIDR except from \"\" to a valid value (it is %q)", o)
	}
	if o := old.GetSpec().GetPodCidrs(); len(o) > 0 && !slices.Equal(o, new.GetSpec().GetPodCidrs()) {
		errs.Add("spec.podCIDRs", "node updates may not change podCIDRs except from empty to a value (they are %q)", o)
	}
	return errs
}
