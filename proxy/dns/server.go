package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/internal/netns"
)

// TTL of the zone's records and of its negative answers, in seconds.
const TTL = 5

// Config configures a Server.
type Config struct {
	// Listen is the address served over UDP and TCP (--cluster-dns, port 53).
	Listen netip.AddrPort
	// Zone answers the cluster domain. Required.
	Zone *Zone
	// Upstreams receive every name outside the zone, tried in order
	// ("ip:port"). Empty: such names get SERVFAIL.
	Upstreams []string
	// ForwardTimeout bounds the forwarding of one query over all upstreams
	// (default 2s), after which the client gets SERVFAIL.
	ForwardTimeout time.Duration
	// NetNS is an open file descriptor of the network namespace to listen
	// in; 0: the process's own.
	NetNS int
	// Registry receives the server's metrics (nil: unregistered).
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if !c.Listen.IsValid() || !c.Listen.Addr().Is4() {
		return fmt.Errorf("--cluster-dns %q: want an IPv4 address", c.Listen)
	}
	if c.Zone == nil {
		return errors.New("dns server: Zone: required")
	}
	for _, u := range c.Upstreams {
		if _, err := netip.ParseAddrPort(u); err != nil {
			return fmt.Errorf("--upstream-dns %q: want ip:port", u)
		}
	}
	if c.ForwardTimeout < 0 {
		return fmt.Errorf("--upstream-timeout %s: must not be negative", c.ForwardTimeout)
	}
	return nil
}

// Server serves cluster DNS.
type Server struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	fwd     *forwarder
	soa     *dns.SOA
}

// NewServer validates cfg and makes a Server.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ForwardTimeout == 0 {
		cfg.ForwardTimeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	d := cfg.Zone.Domain()
	s := &Server{cfg: cfg, log: cfg.Logger.With("dns", cfg.Listen.String()), metrics: m,
		soa: &dns.SOA{Hdr: dns.RR_Header{Name: d, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: TTL},
			Ns: "ns.dns." + d, Mbox: "hostmaster." + d, Serial: uint32(time.Now().Unix()),
			Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: TTL}}
	s.fwd = newForwarder(cfg.NetNS, cfg.Upstreams, cfg.ForwardTimeout, m, s.log)
	return s, nil
}

// Run serves until ctx ends. The listen address must be on an interface
// of the namespace (see EnsureAddress).
func (s *Server) Run(ctx context.Context) error {
	var pc net.PacketConn
	var ln net.Listener
	addr := s.cfg.Listen.String()
	err := netns.Do(s.cfg.NetNS, func() (err error) {
		if pc, err = net.ListenPacket("udp4", addr); err != nil {
			return err
		}
		if ln, err = net.Listen("tcp4", addr); err != nil {
			pc.Close()
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cluster DNS on %s: %w", addr, err)
	}
	servers := []*dns.Server{
		{PacketConn: pc, Handler: s, UDPSize: dns.DefaultMsgSize},
		{Listener: ln, Handler: s, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second},
	}
	s.log.Info("serving cluster DNS", "domain", s.cfg.Zone.Domain(), "upstreams", s.cfg.Upstreams)
	errc := make(chan error, len(servers))
	var wg sync.WaitGroup
	for _, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- srv.ActivateAndServe()
		}()
	}
	select {
	case <-ctx.Done():
		err = nil
	case err = <-errc:
		err = fmt.Errorf("cluster DNS on %s: %w", addr, err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.ShutdownContext(shutdown)
	}
	pc.Close()
	ln.Close()
	wg.Wait()
	return err
}

// ServeDNS answers one query.
func (s *Server) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	start := time.Now()
	if len(r.Question) != 1 || r.Opcode != dns.OpcodeQuery {
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeNotImplemented)
		s.reply(w, r, m, "cluster", start)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	res := s.cfg.Zone.lookup(name)
	if res.kind == outside {
		s.forward(w, r, start)
		return
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	m.RecursionAvailable = true
	if res.kind == nxdomain {
		m.Rcode = dns.RcodeNameError
	} else {
		s.answer(m, q, name, res, network(w))
	}
	if len(m.Answer) == 0 {
		m.Ns = []dns.RR{s.soa}
	}
	s.reply(w, r, m, "cluster", start)
}

// answer fills m with the records of res of q's type. An ExternalName's
// CNAME answers every type, followed by the target's records of that
// type (from the zone, or asked of the upstreams over network).
func (s *Server) answer(m *dns.Msg, q dns.Question, name string, res result, network string) {
	hdr := func(name string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: TTL}
	}
	if res.cname != "" {
		m.Answer = append(m.Answer, &dns.CNAME{Hdr: hdr(q.Name, dns.TypeCNAME), Target: res.cname})
		if q.Qtype != dns.TypeCNAME {
			m.Answer = append(m.Answer, s.chase(q, res.cname, network)...)
		}
		return
	}
	wantA := q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY
	if wantA {
		for _, ip := range res.a {
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr(q.Name, dns.TypeA), A: ip.AsSlice()})
		}
	}
	if q.Qtype == dns.TypeSRV || q.Qtype == dns.TypeANY {
		extra := map[string]bool{}
		for _, r := range res.srv {
			m.Answer = append(m.Answer, &dns.SRV{Hdr: hdr(q.Name, dns.TypeSRV), Priority: 0, Weight: 100, Port: r.port, Target: r.target})
			// The target's address, so clients need not ask again.
			if extra[r.target] {
				continue
			}
			extra[r.target] = true
			for _, ip := range r.a {
				m.Extra = append(m.Extra, &dns.A{Hdr: hdr(r.target, dns.TypeA), A: ip.AsSlice()})
			}
		}
	}
	if q.Qtype == dns.TypeSOA && name == s.cfg.Zone.Domain() {
		m.Answer = append(m.Answer, s.soa)
	}
}

// chase resolves an ExternalName's target for q's type: from the zone
// when it is a cluster name, else from the upstreams. Failures give no
// records (the client still has the CNAME and may ask itself).
func (s *Server) chase(q dns.Question, target, network string) []dns.RR {
	if res := s.cfg.Zone.lookup(target); res.kind != outside {
		if res.kind != exists || res.cname != "" { // no CNAME chains inside the zone
			return nil
		}
		m := new(dns.Msg)
		s.answer(m, dns.Question{Name: target, Qtype: q.Qtype, Qclass: q.Qclass}, target, res, network)
		return m.Answer
	}
	r := new(dns.Msg).SetQuestion(target, q.Qtype)
	r.RecursionDesired = true
	resp, err := s.fwd.exchange(r, network)
	if err != nil || resp.Rcode != dns.RcodeSuccess {
		return nil
	}
	return resp.Answer
}

// reply writes m, truncated to what the client accepts, and counts it.
func (s *Server) reply(w dns.ResponseWriter, r, m *dns.Msg, zone string, start time.Time) {
	size := dns.MinMsgSize
	if _, udp := w.RemoteAddr().(*net.UDPAddr); !udp {
		size = dns.MaxMsgSize
	}
	if opt := r.IsEdns0(); opt != nil {
		size = max(size, int(opt.UDPSize()))
		m.SetEdns0(min(opt.UDPSize(), dns.DefaultMsgSize), false)
	}
	m.Truncate(size)
	if err := w.WriteMsg(m); err != nil {
		s.log.Debug("writing DNS reply", "client", w.RemoteAddr(), "err", err)
	}
	s.metrics.observe(r, m.Rcode, zone, time.Since(start))
}

// network is the client's transport, "udp" or "tcp".
func network(w dns.ResponseWriter) string {
	if _, udp := w.RemoteAddr().(*net.UDPAddr); udp {
		return "udp"
	}
	return "tcp"
}

// forward answers r from the upstreams, or SERVFAIL.
func (s *Server) forward(w dns.ResponseWriter, r *dns.Msg, start time.Time) {
	resp, err := s.fwd.exchange(r, network(w))
	if err != nil {
		s.log.Debug("forwarding failed", "name", r.Question[0].Name, "err", err)
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeServerFailure)
		m.RecursionAvailable = true
		s.reply(w, r, m, "forward", start)
		return
	}
	resp.Id = r.Id
	if err := w.WriteMsg(resp); err != nil {
		s.log.Debug("writing DNS reply", "client", w.RemoteAddr(), "err", err)
	}
	s.metrics.observe(r, resp.Rcode, "forward", time.Since(start))
}
