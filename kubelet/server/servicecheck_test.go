package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"testing"

	"github.com/miekg/dns"

	v1 "github.com/tugboat/tugboat/api/v1"
)

type fakeRules struct {
	got []ServicePort
	err error
}

func (f *fakeRules) Lookup(ports []ServicePort) ([]ServiceRule, error) {
	f.got = ports
	if f.err != nil {
		return nil, f.err
	}
	out := make([]ServiceRule, len(ports))
	for i, p := range ports {
		out[i] = ServiceRule{Verdict: "forward", Endpoints: int(p.Port) % 7}
	}
	return out, nil
}

// startDNS answers web.default.svc.cluster.local. with 10.96.0.20 and
// everything else with NXDOMAIN, on a loopback port.
func startDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "web.default.svc.cluster.local." {
			rr, _ := dns.NewRR("web.default.svc.cluster.local. 5 IN A 10.96.0.20")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestCheckService(t *testing.T) {
	addr := startDNS(t)
	rules := &fakeRules{}
	s := New(Config{NodeName: "n1", ClusterDNS: addr, ServiceRules: rules})
	ctx := context.Background()

	resp, err := s.CheckService(ctx, &v1.CheckServiceRequest{DnsName: "web.default.svc.cluster.local", ClusterIp: "10.96.0.20",
		Ports: []*v1.ServicePortRef{{Protocol: "TCP", Port: 80}, {Protocol: "udp", Port: 53}, {Port: 8080}}})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Dns; d.Rcode != "NOERROR" || fmt.Sprint(d.Addresses) != "[10.96.0.20]" || d.Server != addr {
		t.Errorf("dns: %v", d)
	}
	wantPorts := []ServicePort{{netip.MustParseAddr("10.96.0.20"), "TCP", 80}, {netip.MustParseAddr("10.96.0.20"), "UDP", 53}, {netip.MustParseAddr("10.96.0.20"), "TCP", 8080}}
	if fmt.Sprint(rules.got) != fmt.Sprint(wantPorts) {
		t.Errorf("looked up %v, want %v", rules.got, wantPorts)
	}
	if len(resp.Rules) != 3 || resp.Rules[1].Protocol != "UDP" || resp.Rules[1].Port != 53 || resp.Rules[1].Verdict != "forward" || resp.Rules[1].Endpoints != 4 {
		t.Errorf("rules: %v", resp.Rules)
	}

	// A typo: NXDOMAIN, reported, not an error. No ClusterIP: no rules.
	resp, err = s.CheckService(ctx, &v1.CheckServiceRequest{DnsName: "wbe.default.svc.cluster.local"})
	if err != nil || resp.Dns.Rcode != "NXDOMAIN" || len(resp.Dns.Addresses) != 0 || resp.Rules != nil {
		t.Errorf("typo: %v, %v", resp, err)
	}

	// Rules that cannot be read are reported in the answer.
	rules.err = errors.New(`no nftables table "tugboat"`)
	resp, err = s.CheckService(ctx, &v1.CheckServiceRequest{ClusterIp: "10.96.0.20", Ports: []*v1.ServicePortRef{{Port: 80}}})
	if err != nil || resp.RulesError != `no nftables table "tugboat"` || resp.Dns != nil {
		t.Errorf("unreadable rules: %v, %v", resp, err)
	}

	// Bad input names the field; an unreachable DNS server is reported.
	if _, err := s.CheckService(ctx, &v1.CheckServiceRequest{ClusterIp: "nope"}); err == nil {
		t.Error("bad clusterIp accepted")
	}
	if _, err := s.CheckService(ctx, &v1.CheckServiceRequest{ClusterIp: "10.96.0.20", Ports: []*v1.ServicePortRef{{Port: 70000}}}); err == nil {
		t.Error("bad port accepted")
	}
	s = New(Config{NodeName: "n1"})
	resp, _ = s.CheckService(ctx, &v1.CheckServiceRequest{DnsName: "web", ClusterIp: "10.96.0.20"})
	if resp.Dns.Error == "" || resp.RulesError == "" {
		t.Errorf("unconfigured: %v", resp)
	}
}
