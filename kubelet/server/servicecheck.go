package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// CheckService implements NodeAPI.CheckService: one A query for the
// Service's name to the cluster DNS over UDP (as a pod's resolver would
// ask), one connection to each ClusterIP port (TCP: a handshake; UDP: a
// datagram, then a short wait for a reply or an ICMP error) and one to
// each endpoint named for the port (at most MaxProbedEndpoints), all at
// once, so a node answers within one timeout; all from the network
// namespace probeSource picks (the answer names the pod). The package doc
// says why it probes.
//
// Failures are reported in the answer, not as an error: the caller is
// diagnosing them (tugctl trace service turns them into hops by layer).
// Bad input — an address that is not one, a port out of range, too many
// endpoints — is an InvalidArgument naming the field, and nothing is
// tried.
func (s *Server) CheckService(ctx context.Context, req *v1.CheckServiceRequest) (*v1.CheckServiceResponse, error) {
	var ip netip.Addr
	if req.ClusterIp != "" {
		var err error
		if ip, err = netip.ParseAddr(req.ClusterIp); err != nil {
			return nil, errorf(apierrors.ErrInvalid, "clusterIp %q: not an IP address", req.ClusterIp)
		}
	}
	type probe struct {
		proto string
		addr  netip.AddrPort
		out   **v1.ConnectCheck
	}
	resp := &v1.CheckServiceResponse{NodeName: s.cfg.NodeName}
	var probes []probe
	for i, p := range req.Ports {
		if !ip.IsValid() {
			break
		}
		if p.Port <= 0 || p.Port > 65535 {
			return nil, errorf(apierrors.ErrInvalid, "ports[%d].port %d: want 1-65535", i, p.Port)
		}
		proto := strings.ToUpper(p.Protocol)
		if proto == "" {
			proto = "TCP"
		}
		if proto != "TCP" && proto != "UDP" && proto != "SCTP" {
			return nil, errorf(apierrors.ErrInvalid, "ports[%d].protocol %q: want TCP, UDP or SCTP", i, p.Protocol)
		}
		if len(p.Endpoints) > MaxProbedEndpoints {
			return nil, errorf(apierrors.ErrInvalid, "ports[%d].endpoints: %d given, at most %d", i, len(p.Endpoints), MaxProbedEndpoints)
		}
		pc := &v1.ServicePortCheck{Protocol: proto, Port: p.Port, Endpoints: make([]*v1.ConnectCheck, len(p.Endpoints))}
		resp.Ports = append(resp.Ports, pc)
		probes = append(probes, probe{proto, netip.AddrPortFrom(ip, uint16(p.Port)), &pc.ClusterIp})
		for j, e := range p.Endpoints {
			ap, err := netip.ParseAddrPort(e)
			if err != nil || ap.Port() == 0 {
				return nil, errorf(apierrors.ErrInvalid, "ports[%d].endpoints[%d] %q: want ip:port", i, j, e)
			}
			probes = append(probes, probe{proto, ap, &pc.Endpoints[j]})
		}
	}
	var netnsPath string
	if req.FromPod != "" {
		var err error
		if resp.SourcePod, netnsPath, err = s.podSource(ctx, req.FromPod); err != nil {
			return nil, err
		}
	} else {
		resp.SourcePod, netnsPath = s.probeSource(ctx)
	}
	from := func(fn func()) {
		if netnsPath == "" {
			fn()
			return
		}
		_ = netns.DoPath(netnsPath, func() error { fn(); return nil }) // entered once by probeSource
	}
	// Everything at once: a node's answer takes one timeout, not one per
	// connection.
	var wg sync.WaitGroup
	if req.DnsName != "" {
		wg.Add(1)
		go func() { defer wg.Done(); from(func() { resp.Dns = s.resolve(ctx, req.DnsName) }) }()
	}
	for _, p := range probes {
		wg.Add(1)
		go func() { defer wg.Done(); from(func() { *p.out = s.connect(ctx, p.proto, p.addr) }) }()
	}
	wg.Wait()
	return resp, nil
}

// probeSource picks the network namespace CheckService probes from: the
// oldest running pod's on the node (not a hostNetwork one), as "namespace/
// name" and the namespace's path — its packets take the pods' path,
// through the bridge into the node's datapath — or, when no pod runs
// here, the node's own (the kubelet's: "", "").
func (s *Server) probeSource(ctx context.Context) (pod, netnsPath string) {
	if s.cfg.Runtime == nil {
		return "", ""
	}
	sbs, err := s.cfg.Runtime.ListPodSandbox(ctx, runtime.SandboxFilter{State: runtime.SandboxReady})
	if err != nil {
		return "", ""
	}
	sort.Slice(sbs, func(i, j int) bool { return sbs[i].CreatedAt.Before(sbs[j].CreatedAt) })
	resolver, _ := s.cfg.Streams.(NetNSResolver)
	for _, sb := range sbs {
		if sb.Config.HostNetwork {
			continue
		}
		path := sb.Config.NetNSPath
		if path == "" && resolver != nil {
			// A runtime that owns the pod network (CRI) names it.
			path, _ = resolver.SandboxNetNS(ctx, sb.ID)
		}
		if path == "" || !strings.HasPrefix(path, "/proc/") && !netns.IsPinned(path) {
			continue
		}
		if err := netns.DoPath(path, func() error { return nil }); err == nil { // still there
			return sb.Config.Pod.String(), path
		}
	}
	return "", ""
}

// podSource is the network namespace of pod ("namespace/name") on this
// node, for a check made from that pod: "", "" for a hostNetwork pod (the
// node's namespace is its own); NotFound when the pod has no
// ready sandbox here, or its namespace is gone.
func (s *Server) podSource(ctx context.Context, pod string) (string, string, error) {
	if s.cfg.Runtime == nil {
		return "", "", errorf(apierrors.ErrNotFound, "fromPod %s: node %s runs no pods", pod, s.cfg.NodeName)
	}
	sbs, err := s.cfg.Runtime.ListPodSandbox(ctx, runtime.SandboxFilter{State: runtime.SandboxReady})
	if err != nil {
		return "", "", err
	}
	resolver, _ := s.cfg.Streams.(NetNSResolver)
	for _, sb := range sbs {
		if sb.Config.Pod.String() != pod {
			continue
		}
		if sb.Config.HostNetwork {
			return "", "", nil
		}
		path := sb.Config.NetNSPath
		if path == "" && resolver != nil {
			path, _ = resolver.SandboxNetNS(ctx, sb.ID)
		}
		if path != "" && (strings.HasPrefix(path, "/proc/") || netns.IsPinned(path)) && netns.DoPath(path, func() error { return nil }) == nil {
			return pod, path, nil
		}
		return "", "", errorf(apierrors.ErrNotFound, "fromPod %s: its network namespace on node %s is gone", pod, s.cfg.NodeName)
	}
	return "", "", errorf(apierrors.ErrNotFound, "fromPod %s: no ready sandbox on node %s", pod, s.cfg.NodeName)
}

// NetNSResolver is implemented by runtimes that own the pod network (the
// CRI backend): the path of a sandbox's network namespace, which its
// config does not hold.
type NetNSResolver interface {
	SandboxNetNS(ctx context.Context, sandboxID string) (string, error)
}

// MaxProbedEndpoints bounds the endpoints CheckService connects to per
// port.
const MaxProbedEndpoints = 8

// Connection results, as documented on v1.ConnectCheck.
const (
	ConnectConnected   = "connected"
	ConnectRefused     = "refused"
	ConnectTimeout     = "timeout"
	ConnectUnreachable = "unreachable"
	ConnectNoReply     = "no-reply"
	ConnectNotProbed   = "not-probed"
	ConnectError       = "error"
)

// dnsTimeout bounds the one DNS query of CheckService.
const dnsTimeout = 2 * time.Second

// DefaultConnectTimeout bounds one connection of CheckService (and a UDP
// probe's wait for a reply).
const DefaultConnectTimeout = 2 * time.Second

// connect tries one connection to addr and says what happened.
func (s *Server) connect(ctx context.Context, proto string, addr netip.AddrPort) *v1.ConnectCheck {
	out := &v1.ConnectCheck{Address: addr.String()}
	if proto == "SCTP" {
		out.Result, out.Error = ConnectNotProbed, "SCTP is not probed"
		return out
	}
	timeout := s.cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	defer func() { out.DurationMs = time.Since(start).Milliseconds() }()
	var d net.Dialer
	c, err := d.DialContext(ctx, strings.ToLower(proto), addr.String())
	if err == nil && proto == "UDP" {
		err = udpExchange(c, timeout)
	}
	if c != nil {
		c.Close()
	}
	out.Result = connectResult(err)
	if err != nil {
		out.Error = err.Error()
	}
	return out
}

// errNoReply: a UDP datagram drew neither a reply nor an ICMP error.
var errNoReply = errors.New("no reply")

// udpExchange sends one empty datagram on a connected UDP socket and waits
// for a reply; an ICMP port unreachable comes back as ECONNREFUSED.
func udpExchange(c net.Conn, timeout time.Duration) error {
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.Write(nil); err != nil {
		return err
	}
	buf := make([]byte, 512)
	_, err := c.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w within %s", errNoReply, timeout)
	}
	return err
}

// connectResult classifies a connection's outcome (nil: connected).
func connectResult(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return ConnectConnected
	case errors.Is(err, errNoReply):
		return ConnectNoReply
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return ConnectRefused
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return ConnectUnreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT), errors.As(err, &ne) && ne.Timeout():
		return ConnectTimeout
	}
	return ConnectError
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
