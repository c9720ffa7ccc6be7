package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func networkPolicy() *v1.NetworkPolicy {
	return &v1.NetworkPolicy{Metadata: &v1.ObjectMeta{Name: "allow-frontend", Namespace: "default"},
		Spec: &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []*v1.NetworkPolicyIngressRule{{
				From:  []*v1.NetworkPolicyPeer{{PodSelector: &v1.LabelSelector{MatchLabels: map[string]string{"role": "frontend"}}}},
				Ports: []*v1.NetworkPolicyPort{{Protocol: proto.String("TCP"), Port: proto.String("8080")}}}},
			PolicyTypes: []string{"Ingress"}}}
}

func TestNetworkingValidation(t *testing.T) {
	peer := func(np *v1.NetworkPolicy) *v1.NetworkPolicyPeer { return np.Spec.Ingress[0].From[0] }
	port := func(np *v1.NetworkPolicy) *v1.NetworkPolicyPort { return np.Spec.Ingress[0].Ports[0] }
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return networkPolicy() }, nil},
		{"deny all", func() v1.Object {
			np := networkPolicy()
			np.Spec = &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{}, PolicyTypes: []string{"Ingress", "Egress"}}
			return np
		}, nil},
		{"named port", func() v1.Object { np := networkPolicy(); port(np).Port = proto.String("http"); return np }, nil},
		{"port range", func() v1.Object { np := networkPolicy(); port(np).EndPort = proto.Int32(9000); return np }, nil},
		{"port out of range", func() v1.Object { np := networkPolicy(); port(np).Port = proto.String("70000"); return np },
			[]string{"spec.ingress[0].ports[0].port", "between 1 and 65535"}},
		{"endPort below port", func() v1.Object { np := networkPolicy(); port(np).EndPort = proto.Int32(80); return np },
			[]string{"spec.ingress[0].ports[0].endPort", "greater than or equal to `port`"}},
		{"endPort with a named port", func() v1.Object {
			np := networkPolicy()
			port(np).Port, port(np).EndPort = proto.String("http"), proto.Int32(9000)
			return np
		}, []string{"spec.ingress[0].ports[0].endPort", "non-numeric"}},
		{"endPort without port", func() v1.Object {
			np := networkPolicy()
			port(np).Port, port(np).EndPort = nil, proto.Int32(9000)
			return np
		}, []string{"spec.ingress[0].ports[0].endPort", "not specified"}},
		{"bad protocol", func() v1.Object { np := networkPolicy(); port(np).Protocol = proto.String("ICMP"); return np },
			[]string{"spec.ingress[0].ports[0].protocol", "Unsupported value"}},
		{"empty peer", func() v1.Object {
			np := networkPolicy()
			np.Spec.Ingress[0].From[0] = &v1.NetworkPolicyPeer{}
			return np
		},
			[]string{"spec.ingress[0].from[0]", "must specify a peer"}},
		{"ipBlock and a selector", func() v1.Object {
			np := networkPolicy()
			peer(np).IpBlock = &v1.IPBlock{Cidr: "10.0.0.0/8"}
			return np
		}, []string{"spec.ingress[0].from[0]", "may not specify both ipBlock and another peer"}},
		{"invalid CIDR", func() v1.Object {
			np := networkPolicy()
			np.Spec.Ingress[0].From[0] = &v1.NetworkPolicyPeer{IpBlock: &v1.IPBlock{Cidr: "10.0.0.0/33"}}
			return np
		}, []string{"spec.ingress[0].from[0].ipBlock.cidr", "valid CIDR"}},
		{"IPv6 CIDR", func() v1.Object {
			np := networkPolicy()
			np.Spec.Ingress[0].From[0] = &v1.NetworkPolicyPeer{IpBlock: &v1.IPBlock{Cidr: "fd00::/64"}}
			return np
		}, []string{"spec.ingress[0].from[0].ipBlock.cidr", "IPv4-only"}},
		{"except outside cidr", func() v1.Object {
			np := networkPolicy()
			np.Spec.Ingress[0].From[0] = &v1.NetworkPolicyPeer{IpBlock: &v1.IPBlock{Cidr: "172.17.0.0/16", Except: []string{"172.18.1.0/24"}}}
			return np
		}, []string{"spec.ingress[0].from[0].ipBlock.except[0]", "strict subset"}},
		{"except equal to cidr", func() v1.Object {
			np := networkPolicy()
			np.Spec.Ingress[0].From[0] = &v1.NetworkPolicyPeer{IpBlock: &v1.IPBlock{Cidr: "172.17.0.0/16", Except: []string{"172.17.0.0/16"}}}
			return np
		}, []string{"spec.ingress[0].from[0].ipBlock.except[0]", "strict subset"}},
		{"bad selector", func() v1.Object {
			np := networkPolicy()
			peer(np).PodSelector.MatchExpressions = []*v1.LabelSelectorRequirement{{Key: "role", Operator: "Like"}}
			return np
		}, []string{"spec.ingress[0].from[0].podSelector"}},
		{"egress peer checked", func() v1.Object {
			np := networkPolicy()
			np.Spec.Egress = []*v1.NetworkPolicyEgressRule{{To: []*v1.NetworkPolicyPeer{{}}}}
			return np
		}, []string{"spec.egress[0].to[0]", "must specify a peer"}},
		{"unknown policy type", func() v1.Object { np := networkPolicy(); np.Spec.PolicyTypes = []string{"Both"}; return np },
			[]string{"spec.policyTypes[0]", "Unsupported value"}},
		{"duplicate policy type", func() v1.Object {
			np := networkPolicy()
			np.Spec.PolicyTypes = []string{"Ingress", "Ingress"}
			return np
		},
			[]string{"spec.policyTypes[1]", "Duplicate"}},
	})
}
