// The networking group (networking.k8s.io/v1): NetworkPolicy.

package validation

import (
	"fmt"
	"net/netip"
	"strconv"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// NetworkPolicy validates a network policy with Kubernetes' rules
// (ValidateNetworkPolicySpec) and texts; the cluster is IPv4-only, so an
// IPv6 ipBlock is refused by name.
func NetworkPolicy(p *v1.NetworkPolicy) Errs {
	var errs Errs
	ObjectMeta(&errs, p.Metadata, true, DNSSubdomain)
	s := p.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	peerSelector(&errs, "spec.podSelector", s.PodSelector)
	for i, r := range s.Ingress {
		path := fmt.Sprintf("spec.ingress[%d]", i)
		policyPorts(&errs, path+".ports", r.Ports)
		policyPeers(&errs, path+".from", r.From)
	}
	for i, r := range s.Egress {
		path := fmt.Sprintf("spec.egress[%d]", i)
		policyPorts(&errs, path+".ports", r.Ports)
		policyPeers(&errs, path+".to", r.To)
	}
	seen := map[string]bool{}
	for i, t := range s.PolicyTypes {
		path := fmt.Sprintf("spec.policyTypes[%d]", i)
		switch {
		case t != "Ingress" && t != "Egress":
			errs.Add(path, "Unsupported value: %q: supported values: \"Ingress\", \"Egress\"", t)
		case seen[t]:
			errs.Add(path, "Duplicate value: %q", t)
		}
		seen[t] = true
	}
	if len(s.PolicyTypes) > 2 {
		errs.Add("spec.policyTypes", "may not specify more than two policyTypes")
	}
	return errs
}

// peerSelector checks a selector that may be empty (all pods or all
// namespaces).
func peerSelector(errs *Errs, path string, sel *v1.LabelSelector) {
	if sel == nil {
		return
	}
	Labels(errs, path+".matchLabels", sel.MatchLabels)
	if _, err := labels.FromLabelSelector(sel); err != nil {
		errs.Add(path, "%v", err)
	}
}

func policyPorts(errs *Errs, path string, ports []*v1.NetworkPolicyPort) {
	for i, port := range ports {
		p := fmt.Sprintf("%s[%d]", path, i)
		if port.Protocol != nil {
			switch *port.Protocol {
			case "TCP", "UDP", "SCTP":
			default:
				errs.Add(p+".protocol", "Unsupported value: %q: supported values: \"SCTP\", \"TCP\", \"UDP\"", *port.Protocol)
			}
		}
		if port.Port == nil {
			if port.EndPort != nil {
				errs.Add(p+".endPort", "may not be specified when `port` is not specified")
			}
			continue
		}
		n, err := strconv.Atoi(*port.Port)
		if err != nil {
			IntOrName(errs, p+".port", *port.Port)
			if port.EndPort != nil {
				errs.Add(p+".endPort", "may not be specified when `port` is non-numeric")
			}
			continue
		}
		if n < 1 || n > 65535 {
			errs.Add(p+".port", "Invalid value: %d: must be between 1 and 65535, inclusive", n)
		}
		if port.EndPort != nil {
			switch e := *port.EndPort; {
			case e < int32(n):
				errs.Add(p+".endPort", "must be greater than or equal to `port`")
			case e > 65535:
				errs.Add(p+".endPort", "Invalid value: %d: must be between 1 and 65535, inclusive", e)
			}
		}
	}
}

func policyPeers(errs *Errs, path string, peers []*v1.NetworkPolicyPeer) {
	for i, peer := range peers {
		p := fmt.Sprintf("%s[%d]", path, i)
		n := 0
		if peer.PodSelector != nil {
			n++
			peerSelector(errs, p+".podSelector", peer.PodSelector)
		}
		if peer.NamespaceSelector != nil {
			n++
			peerSelector(errs, p+".namespaceSelector", peer.NamespaceSelector)
		}
		if peer.IpBlock != nil {
			n++
			ipBlock(errs, p+".ipBlock", peer.IpBlock)
		}
		switch {
		case n == 0:
			errs.Add(p, "Required value: must specify a peer")
		case n > 1 && peer.IpBlock != nil:
			errs.Add(p, "Forbidden: may not specify both ipBlock and another peer")
		}
	}
}

func ipBlock(errs *Errs, path string, b *v1.IPBlock) {
	if b.Cidr == "" {
		errs.Add(path+".cidr", "Required value")
		return
	}
	cidr, err := netip.ParsePrefix(b.Cidr)
	if err != nil {
		errs.Add(path+".cidr", "Invalid value: %s: must be a valid CIDR such as 10.0.0.0/24", Short(b.Cidr))
		return
	}
	if !cidr.Addr().Is4() {
		errs.Add(path+".cidr", "%q is an IPv6 CIDR: this cluster is IPv4-only", b.Cidr)
		return
	}
	for i, e := range b.Except {
		p := fmt.Sprintf("%s.except[%d]", path, i)
		ex, err := netip.ParsePrefix(e)
		switch {
		case err != nil:
			errs.Add(p, "Invalid value: %s: must be a valid CIDR such as 10.0.0.0/24", Short(e))
		case !ex.Addr().Is4():
			errs.Add(p, "%q is an IPv6 CIDR: this cluster is IPv4-only", e)
		case !(ex.Bits() > cidr.Bits() && cidr.Contains(ex.Addr())):
			errs.Add(p, "Invalid value: %q: must be a strict subset of `cidr`", e)
		}
	}
}
