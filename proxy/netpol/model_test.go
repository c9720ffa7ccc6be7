package netpol

import (
	"net/netip"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/netpolicy"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func compileAll(t *testing.T, nps ...*v1.NetworkPolicy) []*netpolicy.Policy {
	t.Helper()
	src := newFakeSource()
	var out []*netpolicy.Policy
	for _, np := range nps {
		src.setPolicy(np) // defaulted and validated as the apiserver would
		p, err := netpolicy.Compile(np)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func endpoints(t *testing.T, pods ...*v1.Pod) []netpolicy.Endpoint {
	var out []netpolicy.Endpoint
	for _, p := range pods {
		e, ok := netpolicy.EndpointOf(p)
		if !ok {
			t.Fatalf("pod %s has no endpoint", p.Metadata.Name)
		}
		out = append(out, e)
	}
	return out
}

func TestBuild(t *testing.T) {
	http := &v1.ContainerPort{Name: "http", ContainerPort: 8080}
	web := pod("default", "web", "n1", "10.244.1.2", map[string]string{"app": "web"}, http)
	remoteWeb := pod("default", "web-2", "n2", "10.244.2.2", map[string]string{"app": "web"}, http)
	front := pod("default", "front", "n2", "10.244.2.3", map[string]string{"role": "frontend"})
	in := Input{Node: "n1", Endpoints: endpoints(t, web, remoteWeb, front), Namespaces: func(string) map[string]string { return nil }}

	in.Policies = compileAll(t,
		netpol("default", "deny", &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{}}),
		netpol("default", "allow", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"),
			Ingress: []*v1.NetworkPolicyIngressRule{{
				From:  []*v1.NetworkPolicyPeer{{PodSelector: sel("role", "frontend")}, {IpBlock: &v1.IPBlock{Cidr: "192.168.0.0/16", Except: []string{"192.168.1.0/24"}}}},
				Ports: []*v1.NetworkPolicyPort{{Port: proto.String("http")}, {Protocol: proto.String("UDP"), Port: proto.String("5000"), EndPort: proto.Int32(5010)}}}},
			Egress: []*v1.NetworkPolicyEgressRule{{Ports: []*v1.NetworkPolicyPort{{Port: proto.String("http")}}}}}),
	)
	rs := Build(in)
	webIP := netip.MustParseAddr("10.244.1.2")
	if got := rs.Ingress[webIP]; got != "pod-in/default/web" {
		t.Fatalf("ingress map %v", rs.Ingress)
	}
	if len(rs.Ingress) != 1 {
		t.Errorf("only the local pod is enforced here: %v", rs.Ingress)
	}
	if got := rs.Chains["pod-in/default/web"]; len(got) != 3 || got[0].Target != "np-in/default/allow" || got[1].Target != "np-in/default/deny" || got[2].Verdict != Drop {
		t.Errorf("pod chain %+v", got)
	}
	if got := rs.Chains["np-in/default/deny"]; len(got) != 0 {
		t.Errorf("deny-all chain has rules: %+v", got)
	}
	allow := rs.Chains["np-in/default/allow"]
	// http: pods then the block; UDP range: pods then the block.
	if len(allow) != 4 {
		t.Fatalf("allow chain %+v", allow)
	}
	if r := allow[0]; len(r.Addrs) != 1 || r.Addrs[0].String() != "10.244.2.3" || len(r.Named) != 1 || r.Named[0] != (Tuple{webIP, 6, 8080}) {
		t.Errorf("named-port rule %+v", r)
	}
	if r := allow[1]; r.Prefix.String() != "192.168.0.0/16" || len(r.Except) != 1 || len(r.Named) != 1 {
		t.Errorf("block rule %+v", r)
	}
	if r := allow[2]; r.Proto != 17 || r.PortMin != 5000 || r.PortMax != 5010 {
		t.Errorf("UDP range rule %+v", r)
	}
	// Egress to the named port http of any pod: both web pods' tuples.
	if r := rs.Chains["np-out/default/allow"]; len(r) != 1 || len(r[0].Named) != 2 {
		t.Errorf("egress chain %+v", r)
	}

	// Diff: removing deny touches the pod chain and drops deny's chain only.
	in.Policies = in.Policies[1:]
	ch := Diff(rs, Build(in))
	if len(ch.NewChains) != 0 || len(ch.SetChains) != 1 || ch.SetChains["pod-in/default/web"] == nil || len(ch.DelChains) != 1 || ch.DelChains[0] != "np-in/default/deny" {
		t.Errorf("diff %+v", ch)
	}
	if len(ch.AddIngress)+len(ch.DelIngress) != 0 {
		t.Errorf("map unchanged, got %+v", ch)
	}
	if !Diff(Build(in), Build(in)).Empty() {
		t.Error("a rebuild of the same input must change nothing")
	}
}

func TestEvaluate(t *testing.T) {
	web := pod("default", "web", "n1", "10.244.1.2", map[string]string{"app": "web"}, &v1.ContainerPort{Name: "http", ContainerPort: 8080})
	front := pod("default", "front", "n2", "10.244.2.3", map[string]string{"role": "frontend"})
	other := pod("team", "other", "n2", "10.244.2.4", map[string]string{"role": "frontend"})
	eps := endpoints(t, web, front, other)
	nsLabels := func(n string) map[string]string { return map[string]string{"team": n} }
	pols := compileAll(t,
		netpol("default", "deny", &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{}}),
		netpol("default", "allow", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"),
			Ingress: []*v1.NetworkPolicyIngressRule{{From: []*v1.NetworkPolicyPeer{{PodSelector: sel("role", "frontend")}},
				Ports: []*v1.NetworkPolicyPort{{Port: proto.String("http")}}}}}),
		netpol("team", "no-egress", &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{}, PolicyTypes: []string{"Egress"}}),
	)
	for _, c := range []struct {
		name      string
		from, to  *netpolicy.Endpoint
		port      uint16
		allowed   bool
		droppedBy string
		by        string
	}{
		{"front to web http", &eps[1], &eps[0], 8080, true, "", "default/allow"},
		{"front to web other port", &eps[1], &eps[0], 9090, false, "ingress", ""},
		{"web to front (deny isolates front)", &eps[0], &eps[1], 8080, false, "ingress", ""},
		{"other namespace: egress isolated", &eps[2], &eps[0], 8080, false, "egress", ""},
	} {
		v := netpolicy.Evaluate(pols, nsLabels, netpolicy.Connection{From: c.from, To: c.to, Protocol: "TCP", Port: c.port})
		if v.Allowed != c.allowed || v.DroppedBy != c.droppedBy || v.IngressAllowedBy != c.by {
			t.Errorf("%s: %+v", c.name, v)
		}
	}
}
