// The networking group (networking.k8s.io/v1): NetworkPolicy, IngressClass, Ingress.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var networkingKinds = []*Kind{
	{Name: "NetworkPolicy", Plural: "networkpolicies", Short: []string{"netpol"}, APIVersion: "networking.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.NetworkPolicy{} }, Default: typedDefault(defaultNetworkPolicy), Validate: typed(validation.NetworkPolicy)},
	{Name: "IngressClass", Plural: "ingressclasses", APIVersion: "networking.k8s.io/v1",
		New: func() v1.Object { return &v1.IngressClass{} }, Default: typedDefault(defaultIngressClass), Validate: typed(validation.IngressClass),
		ValidateUpdate: typedUpdate(validation.IngressClassUpdate)},
	// Kubernetes defaults nothing in an Ingress (pathType is required in
	// v1); the default class is filled in by the apiserver's admission.
	{Name: "Ingress", Plural: "ingresses", Short: []string{"ing"}, APIVersion: "networking.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Ingress{} }, Default: noDefault, Validate: typed(validation.Ingress)},
}

// defaultIngressClass is Kubernetes' SetDefaults_IngressClass: a
// parameters reference without scope is Cluster-scoped.
func defaultIngressClass(c *v1.IngressClass) {
	if p := c.GetSpec().GetParameters(); p != nil && p.Scope == nil {
		cluster := "Cluster"
		p.Scope = &cluster
	}
}

// defaultNetworkPolicy is Kubernetes' SetDefaults_NetworkPolicy: an unset
// podSelector selects every pod of the namespace; ports' protocol TCP;
// policyTypes Ingress, plus Egress when there are egress rules.
func defaultNetworkPolicy(p *v1.NetworkPolicy) {
	if p.Spec == nil {
		p.Spec = &v1.NetworkPolicySpec{}
	}
	s := p.Spec
	if s.PodSelector == nil {
		s.PodSelector = &v1.LabelSelector{}
	}
	defaultPorts := func(ports []*v1.NetworkPolicyPort) {
		for _, port := range ports {
			if port.Protocol == nil {
				tcp := "TCP"
				port.Protocol = &tcp
			}
		}
	}
	for _, r := range s.Ingress {
		defaultPorts(r.Ports)
	}
	for _, r := range s.Egress {
		defaultPorts(r.Ports)
	}
	if len(s.PolicyTypes) == 0 {
		s.PolicyTypes = []string{"Ingress"}
		if len(s.Egress) > 0 {
			s.PolicyTypes = append(s.PolicyTypes, "Egress")
		}
	}
}
