package describe

import (
	"context"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// describeNetworkPolicy prints a policy as kubectl does (Spec: the pod
// selector, the ingress and egress rules, the policy types), then its
// events.
func describeNetworkPolicy(ctx context.Context, d *describer, p *v1.NetworkPolicy) error {
	m := p.GetMetadata()
	d.kv(0, "Name", m.GetName())
	d.kv(0, "Namespace", m.GetNamespace())
	d.kv(0, "Created on", timeString(m.GetCreationTimestamp()))
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	s := p.GetSpec()
	d.text(0, "Spec:")
	if sel := s.GetPodSelector(); len(sel.GetMatchLabels()) == 0 && len(sel.GetMatchExpressions()) == 0 {
		d.text(1, "PodSelector:     <none> (Allowing the specific traffic to all pods in this namespace)")
	} else {
		d.text(1, "PodSelector:     %s", table.SelectorString(sel))
	}
	ingress, egress := policyTypes(s)
	if ingress {
		d.text(1, "Allowing ingress traffic:")
		if len(s.GetIngress()) == 0 {
			d.text(2, "<none> (Selected pods are isolated for ingress connectivity)")
		}
		for i, r := range s.GetIngress() {
			d.policyRule(r.GetPorts(), r.GetFrom(), "From", "traffic not restricted by source", i == len(s.GetIngress())-1)
		}
	} else {
		d.text(1, "Not affecting ingress traffic")
	}
	if egress {
		d.text(1, "Allowing egress traffic:")
		if len(s.GetEgress()) == 0 {
			d.text(2, "<none> (Selected pods are isolated for egress connectivity)")
		}
		for i, r := range s.GetEgress() {
			d.policyRule(r.GetPorts(), r.GetTo(), "To", "traffic not restricted by destination", i == len(s.GetEgress())-1)
		}
	} else {
		d.text(1, "Not affecting egress traffic")
	}
	d.text(1, "Policy Types: %s", strings.Join(s.GetPolicyTypes(), ", "))
	return d.events(ctx, p)
}

// policyTypes is whether the policy isolates for ingress and for egress
// (its types; stored policies always have them, defaulted).
func policyTypes(s *v1.NetworkPolicySpec) (ingress, egress bool) {
	for _, t := range s.GetPolicyTypes() {
		ingress = ingress || t == "Ingress"
		egress = egress || t == "Egress"
	}
	return
}

// policyRule writes one rule's ports and peers, kubectl's way.
func (d *describer) policyRule(ports []*v1.NetworkPolicyPort, peers []*v1.NetworkPolicyPeer, word, anyText string, last bool) {
	if len(ports) == 0 {
		d.text(2, "To Port: <any> (traffic allowed to all ports)")
	}
	for _, port := range ports {
		d.text(2, "To Port: %s", PolicyPortString(port))
	}
	if len(peers) == 0 {
		d.text(2, "%s: <any> (%s)", word, anyText)
	}
	for _, peer := range peers {
		d.text(2, "%s:", word)
		switch {
		case peer.GetIpBlock() != nil:
			d.text(3, "IPBlock:")
			d.text(4, "CIDR: %s", peer.GetIpBlock().GetCidr())
			d.text(4, "Except: %s", strings.Join(peer.GetIpBlock().GetExcept(), ", "))
		default:
			if peer.GetNamespaceSelector() != nil {
				d.text(3, "NamespaceSelector: %s", table.SelectorString(peer.GetNamespaceSelector()))
			}
			if peer.GetPodSelector() != nil {
				d.text(3, "PodSelector: %s", table.SelectorString(peer.GetPodSelector()))
			}
		}
	}
	if !last {
		d.text(2, "----------")
	}
}

// PolicyPortString is kubectl's "80/TCP", "8000-9000/TCP", "http/TCP" or
// "<any>/UDP".
func PolicyPortString(p *v1.NetworkPolicyPort) string {
	proto := "TCP"
	if p.Protocol != nil {
		proto = p.GetProtocol()
	}
	port := "<any>"
	if p.Port != nil {
		port = p.GetPort()
	}
	if p.EndPort != nil {
		port = fmt.Sprintf("%s-%d", port, p.GetEndPort())
	}
	return port + "/" + proto
}
