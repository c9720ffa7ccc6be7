package server

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ServicePort is one ClusterIP port whose rules CheckService looks up.
type ServicePort struct {
	IP       netip.Addr
	Protocol string // TCP, UDP or SCTP
	Port     uint16
}

// ServiceRule is what the node's datapath does with traffic to one
// ServicePort: Verdict "forward" (to Endpoints endpoints), "reject" or
// "missing".
type ServiceRule struct {
	Verdict   string
	Endpoints int
}

// ServiceRules reads the node's Service datapath as the kernel holds it
// (the proxy's nftables table in the kubelet's network namespace, which
// is the node's). Lookup returns one rule per port, in order, or an error
// saying why the rules cannot be read (no table: no proxy on the node).
type ServiceRules interface {
	Lookup(ports []ServicePort) ([]ServiceRule, error)
}

// dnsTimeout bounds the one DNS query of CheckService.
const dnsTimeout = 2 * time.Second

// CheckService implements NodeAPI.CheckService: it asks the node's
// cluster DNS for the name (one A query over UDP, as a pod's resolver
// would) and reads the node's rules for the ClusterIP ports. Failures of
// either are reported in the answer, not as an error: the caller is
// diagnosing them.
func (s *Server) CheckService(ctx context.Context, req *v1.CheckServiceRequest) (*v1.CheckServiceResponse, error) {
	resp := &v1.CheckServiceResponse{NodeName: s.cfg.NodeName}
	if req.DnsName != "" {
		resp.Dns = s.resolve(ctx, req.DnsName)
	}
	if req.ClusterIp == "" {
		return resp, nil
	}
	ip, err := netip.ParseAddr(req.ClusterIp)
	if err != nil {
		return nil, errorf(apierrors.ErrInvalid, "clusterIp %q: not an IP address", req.ClusterIp)
	}
	var ports []ServicePort
	for i, p := range req.Ports {
		if p.Port <= 0 || p.Port > 65535 {
			return nil, errorf(apierrors.ErrInvalid, "ports[%d].port %d: want 1-65535", i, p.Port)
		}
		proto := strings.ToUpper(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		ports = append(ports, ServicePort{IP: ip, Protocol: proto, Port: uint16(p.Port)})
	}
	if s.cfg.ServiceRules == nil {
		resp.RulesError = "this kubelet cannot read the node's Service rules"
		return resp, nil
	}
	rules, err := s.cfg.ServiceRules.Lookup(ports)
	if err != nil {
		resp.RulesError = err.Error()
		return resp, nil
	}
	for i, p := range ports {
		resp.Rules = append(resp.Rules, &v1.ServiceRuleCheck{
			Protocol: p.Protocol, Port: int32(p.Port), Verdict: rules[i].Verdict, Endpoints: int32(rules[i].Endpoints),
		})
	}
	return resp, nil
}

// resolve asks the cluster DNS for name's A records.
func (s *Server) resolve(ctx context.Context, name string) *v1.DNSCheck {
	if s.cfg.ClusterDNS == "" {
		return &v1.DNSCheck{Error: "the kubelet has no --cluster-dns"}
	}
	server := s.cfg.ClusterDNS
	if _, err := netip.ParseAddrPort(server); err != nil {
		server = net.JoinHostPort(server, "53")
	}
	out := &v1.DNSCheck{Server: server}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.RecursionDesired = true
	ctx, cancel := context.WithTimeout(ctx, dnsTimeout)
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: dnsTimeout}
	r, _, err := c.ExchangeContext(ctx, m, server)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Rcode = dns.RcodeToString[r.Rcode]
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out.Addresses = append(out.Addresses, a.A.String())
		}
	}
	return out
}
