package nftables

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"
)

func sp(name string, proto Protocol, ip string, port, nodePort uint16, endpoints ...string) ServicePort {
	out := ServicePort{Service: "default/" + name, Protocol: proto, ClusterIP: netip.MustParseAddr(ip), Port: port, NodePort: nodePort}
	for _, e := range endpoints {
		ap := netip.MustParseAddrPort(e)
		out.Endpoints = append(out.Endpoints, Endpoint{IP: ap.Addr(), Port: ap.Port()})
	}
	return out
}

func build(sps ...ServicePort) *Ruleset { return Build(sps, Options{ClusterCIDR: clusterCIDR}) }

// summary renders changes compactly for comparison.
func summary(c *Changes) []string {
	var out []string
	for _, x := range c.AddChains {
		out = append(out, "+chain "+x.Name)
	}
	for _, x := range c.UpdateChains {
		out = append(out, "~chain "+x.Name)
	}
	for _, x := range c.DelChains {
		out = append(out, "-chain "+x)
	}
	for k, v := range c.AddServiceIPs {
		out = append(out, "+ip "+k.String()+" "+v)
	}
	for _, k := range c.DelServiceIPs {
		out = append(out, "-ip "+k.String())
	}
	for k, v := range c.AddNodePorts {
		out = append(out, "+np "+k.String()+" "+v)
	}
	for _, k := range c.DelNodePorts {
		out = append(out, "-np "+k.String())
	}
	for _, k := range c.AddRejectIPs {
		out = append(out, "+reject "+k.String())
	}
	for _, k := range c.DelRejectIPs {
		out = append(out, "-reject "+k.String())
	}
	for _, k := range c.AddRejectNodePorts {
		out = append(out, "+rejectnp "+k.String())
	}
	for _, k := range c.DelRejectNodePorts {
		out = append(out, "-rejectnp "+k.String())
	}
	for _, a := range c.AddHairpin {
		out = append(out, "+hairpin "+a.String())
	}
	for _, a := range c.DelHairpin {
		out = append(out, "-hairpin "+a.String())
	}
	for _, f := range c.StaleUDP {
		out = append(out, fmt.Sprintf("stale %v:%d<-%v", f.Dst, f.DstPort, f.Endpoint))
	}
	slices.Sort(out)
	return out
}

func TestDiff(t *testing.T) {
	web := func(eps ...string) ServicePort { return sp("web", TCP, "10.96.0.20", 80, 0, eps...) }
	dns := func(eps ...string) ServicePort { return sp("dns", UDP, "10.96.0.53", 53, 30053, eps...) }
	lbDNS := func(eps ...string) ServicePort {
		p := dns(eps...)
		p.LoadBalancerIPs = []netip.Addr{netip.MustParseAddr("203.0.113.10")}
		return p
	}
	tests := []struct {
		name     string
		old, new *Ruleset
		want     []string
	}{
		{"nothing", build(web("10.244.1.2:80")), build(web("10.244.1.2:80")), nil},
		{"new service", nil, build(web("10.244.1.2:80")), []string{
			"+chain svc-default/web/tcp/80", "+hairpin 10.244.1.2", "+ip 10.96.0.20 . tcp . 80 svc-default/web/tcp/80"}},
		{"endpoint added: chain rewritten, elements kept", build(web("10.244.1.2:80")), build(web("10.244.1.2:80", "10.244.2.2:80")), []string{
			"+hairpin 10.244.2.2", "~chain svc-default/web/tcp/80"}},
		{"last endpoint gone: chain deleted, address rejected", build(web("10.244.1.2:80")), build(web()), []string{
			"+reject 10.96.0.20 . tcp . 80", "-chain svc-default/web/tcp/80", "-hairpin 10.244.1.2", "-ip 10.96.0.20 . tcp . 80"}},
		{"endpoints back", build(web()), build(web("10.244.1.2:80")), []string{
			"+chain svc-default/web/tcp/80", "+hairpin 10.244.1.2", "+ip 10.96.0.20 . tcp . 80 svc-default/web/tcp/80", "-reject 10.96.0.20 . tcp . 80"}},
		{"service deleted", build(web("10.244.1.2:80")), nil, []string{
			"-chain svc-default/web/tcp/80", "-hairpin 10.244.1.2", "-ip 10.96.0.20 . tcp . 80"}},
		{"UDP endpoint removed: its flows are stale, on the ClusterIP and the nodePort", build(dns("10.244.1.2:53", "10.244.2.2:53")), build(dns("10.244.2.2:53")), []string{
			"-hairpin 10.244.1.2", "stale 10.96.0.53:53<-10.244.1.2", "stale invalid IP:30053<-10.244.1.2", "~chain svc-default/dns/udp/53"}},
		{"UDP endpoint removed from a LoadBalancer: flows to its load-balancer address are stale too", build(lbDNS("10.244.1.2:53", "10.244.2.2:53")), build(lbDNS("10.244.2.2:53")), []string{
			"-hairpin 10.244.1.2", "stale 10.96.0.53:53<-10.244.1.2", "stale 203.0.113.10:53<-10.244.1.2", "stale invalid IP:30053<-10.244.1.2", "~chain svc-default/dns/udp/53"}},
		{"UDP service deleted", build(dns("10.244.1.2:53")), nil, []string{
			"-chain svc-default/dns/udp/53", "-hairpin 10.244.1.2", "-ip 10.96.0.53 . udp . 53", "-np udp . 30053", "stale 10.96.0.53:53<-10.244.1.2", "stale invalid IP:30053<-10.244.1.2"}},
		{"nodePort changed", build(sp("np", TCP, "10.96.0.9", 80, 30001, "10.244.1.2:80")), build(sp("np", TCP, "10.96.0.9", 80, 30002, "10.244.1.2:80")), []string{
			"+np tcp . 30002 svc-default/np/tcp/80", "-np tcp . 30001", "~chain svc-default/np/tcp/80"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(Diff(tt.old, tt.new))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
			if c := Diff(tt.old, tt.new); c.Empty() != (len(tt.want) == 0) {
				t.Errorf("Empty() = %v", c.Empty())
			}
		})
	}
}

func TestMergeReportsConflicts(t *testing.T) {
	a := build(sp("a", TCP, "10.96.0.5", 80, 30001, "10.244.1.2:80"))
	b := build(sp("b", TCP, "10.96.0.5", 80, 30001))
	conflicts := a.Merge(b)
	slices.Sort(conflicts)
	if want := []string{"10.96.0.5 . tcp . 80", "tcp . 30001"}; !slices.Equal(conflicts, want) {
		t.Fatalf("conflicts %q, want %q", conflicts, want)
	}
	if len(a.RejectIPs) != 0 || a.ServiceIPs[IPPortKey{netip.MustParseAddr("10.96.0.5"), TCP, 80}] != "svc-default/a/tcp/80" {
		t.Fatalf("first holder must keep the key:\n%s", a)
	}
}
