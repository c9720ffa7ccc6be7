// The core group (apiVersion v1): Namespace, Node, Event, ConfigMap,
// Secret, Service, Endpoints; Pod is in core_pod.go.

package validation

import (
	"fmt"
	"net"
	"slices"

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

// Secret validates a secret.
func Secret(s *v1.Secret) Errs {
	var errs Errs
	ObjectMeta(&errs, s.Metadata, true, DNSSubdomain)
	ConfigKeys(&errs, "data", s.Data)
	ConfigKeys(&errs, "stringData", s.StringData)
	return errs
}

// Service validates a service.
func Service(s *v1.Service) Errs {
	var errs Errs
	ObjectMeta(&errs, s.Metadata, true, DNSLabel)
	spec := s.Spec
	if spec == nil {
		errs.Add("spec", "required")
		return errs
	}
	OneOf(&errs, "spec.type", spec.Type, "ClusterIP", "NodePort")
	Labels(&errs, "spec.selector", spec.Selector)
	if spec.ClusterIp != "" && spec.ClusterIp != "None" {
		IP(&errs, "spec.clusterIP", spec.ClusterIp)
	}
	if len(spec.Ports) == 0 && spec.ClusterIp != "None" {
		errs.Add("spec.ports", "required: at least one port")
	}
	names := map[string]bool{}
	seen := map[string]bool{}
	nodePorts := map[int32]bool{}
	for i, p := range spec.Ports {
		pp := fmt.Sprintf("spec.ports[%d]", i)
		Port(&errs, pp+".port", p.Port)
		OneOf(&errs, pp+".protocol", p.Protocol, "TCP", "UDP")
		IntOrName(&errs, pp+".targetPort", p.TargetPort)
		if len(spec.Ports) > 1 && p.Name == "" {
			errs.Add(pp+".name", "required when a service has more than one port")
		}
		if p.Name != "" {
			DNSLabel(&errs, pp+".name", p.Name)
			if names[p.Name] {
				errs.Add(pp+".name", "%q is duplicated", p.Name)
			}
			names[p.Name] = true
		}
		key := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if seen[key] {
			errs.Add(pp, "port %s is duplicated", key)
		}
		seen[key] = true
		if p.NodePort != 0 {
			if spec.Type != "NodePort" {
				errs.Add(pp+".nodePort", "only valid for type NodePort")
			} else {
				// The range is the apiserver's --service-node-port-range,
				// checked where ports are allocated.
				Port(&errs, pp+".nodePort", p.NodePort)
				if nodePorts[p.NodePort] {
					errs.Add(pp+".nodePort", "%d is used twice in this Service", p.NodePort)
				}
				nodePorts[p.NodePort] = true
			}
		}
	}
	return errs
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
