package validation

import (
	"fmt"
	"net"

	"google.golang.org/protobuf/proto"

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

// Lease validates a lease.
func Lease(l *v1.Lease) Errs {
	var errs Errs
	ObjectMeta(&errs, l.Metadata, true, DNSSubdomain)
	if l.Spec.GetLeaseDurationSeconds() < 0 {
		errs.Add("spec.leaseDurationSeconds", "must be >= 0")
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

// replicated is the spec an apps/v1 workload shares: the Deployment's and
// the ReplicaSet's replicas, minReadySeconds, selector and pod template.
type replicated interface {
	GetReplicas() int32
	GetMinReadySeconds() int32
	GetSelector() *v1.LabelSelector
	GetTemplate() *v1.PodTemplateSpec
}

// replicatedSpec validates the metadata and the shared spec fields of an
// apps/v1 workload; it reports whether there is a spec to check further.
func replicatedSpec(errs *Errs, m *v1.ObjectMeta, s replicated, hasSpec bool) bool {
	ObjectMeta(errs, m, true, DNSSubdomain)
	if !hasSpec {
		errs.Add("spec", "required")
		return false
	}
	if s.GetReplicas() < 0 {
		errs.Add("spec.replicas", "must be >= 0")
	}
	if s.GetMinReadySeconds() < 0 {
		errs.Add("spec.minReadySeconds", "must be >= 0")
	}
	selectorMatchesTemplate(errs, s.GetSelector(), s.GetTemplate())
	PodTemplate(errs, "spec.template", s.GetTemplate())
	return true
}

// ReplicaSet validates a replica set.
func ReplicaSet(r *v1.ReplicaSet) Errs {
	var errs Errs
	replicatedSpec(&errs, r.Metadata, r.Spec, r.Spec != nil)
	return errs
}

// Deployment validates a deployment.
func Deployment(d *v1.Deployment) Errs {
	var errs Errs
	s := d.Spec
	if !replicatedSpec(&errs, d.Metadata, s, s != nil) {
		return errs
	}
	if st := s.Strategy; st != nil {
		OneOf(&errs, "spec.strategy.type", st.Type, "RollingUpdate", "Recreate")
		if ru := st.RollingUpdate; ru != nil {
			if st.Type == "Recreate" {
				errs.Add("spec.strategy.rollingUpdate", "must be empty when type is Recreate")
			}
			IntOrPercent(&errs, "spec.strategy.rollingUpdate.maxSurge", ru.MaxSurge, false)
			IntOrPercent(&errs, "spec.strategy.rollingUpdate.maxUnavailable", ru.MaxUnavailable, true)
			if isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) {
				errs.Add("spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when maxSurge is 0")
			}
		}
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 0 {
		errs.Add("spec.revisionHistoryLimit", "must be >= 0")
	}
	if s.ProgressDeadlineSeconds != nil && *s.ProgressDeadlineSeconds <= s.MinReadySeconds {
		errs.Add("spec.progressDeadlineSeconds", "must be greater than minReadySeconds")
	}
	return errs
}

func isZero(v string) bool { return v == "0" || v == "0%" }

// SelectorUnchanged refuses a change of an apps/v1 selector, which is
// immutable (pods would be orphaned or adopted behind the user's back).
func SelectorUnchanged(errs *Errs, old, new *v1.LabelSelector) {
	if !proto.Equal(old, new) {
		errs.Add("spec.selector", "field is immutable")
	}
}

func selectorMatchesTemplate(errs *Errs, sel *v1.LabelSelector, t *v1.PodTemplateSpec) {
	LabelSelector(errs, "spec.selector", sel)
	s, err := labels.FromLabelSelector(sel)
	if err != nil || sel == nil {
		return
	}
	if !s.Matches(t.GetMetadata().GetLabels()) {
		errs.Add("spec.template.metadata.labels", "selector %q does not match the template's labels", s.String())
	}
}
