package dns

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/wait"
)

// freePort returns a port free for both UDP and TCP on 127.0.0.1.
func freePort(t testing.TB) uint16 {
	t.Helper()
	for i := 0; i < 50; i++ {
		l, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp4", l.Addr().String())
		l.Close()
		if err == nil {
			pc.Close()
			return uint16(port)
		}
	}
	t.Fatal("no free port")
	return 0
}

// startServer runs a cluster DNS server on loopback until the test ends.
func startServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	if !cfg.Listen.IsValid() {
		cfg.Listen = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
	}
	if cfg.Zone == nil {
		cfg.Zone = testZone()
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Wait until it answers.
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	wait.Eventually(t, 5*time.Second, "the server to answer", func() error {
		m := new(dns.Msg).SetQuestion("cluster.local.", dns.TypeSOA)
		_, _, err := c.Exchange(m, cfg.Listen.String())
		return err
	})
	return s, cfg.Listen.String()
}

// fakeUpstream answers every A query with 192.0.2.1, over UDP and TCP.
func fakeUpstream(t testing.TB) string {
	t.Helper()
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String()
	pc, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		q := r.Question[0]
		if q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.ParseIP("192.0.2.1")})
		}
		_ = w.WriteMsg(m)
	})
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go func() { _ = srv.ActivateAndServe() }()
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return addr
}

// dig runs Debian's dig against addr and returns its output.
func dig(t testing.TB, addr string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("dig")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("dig missing in CI: hack/install-deps.sh installs bind9-dnsutils")
		}
		t.Skip("dig not installed (hack/install-deps.sh installs bind9-dnsutils)")
	}
	host, port, _ := net.SplitHostPort(addr)
	all := append([]string{"@" + host, "-p", port, "+time=5", "+tries=1", "+noall", "+comments", "+answer", "+additional"}, args...)
	out, err := exec.Command(path, all...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", strings.Join(all, " "), err, out)
	}
	return string(out)
}

// mustContain checks for each want in out, with runs of blanks in both
// read as one space (dig aligns its columns with tabs).
func mustContain(t testing.TB, out string, wants ...string) {
	t.Helper()
	norm := func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			lines[i] = strings.Join(strings.Fields(l), " ")
		}
		return strings.Join(lines, "\n")
	}
	for _, w := range wants {
		if !strings.Contains(norm(out), norm(w)) {
			t.Errorf("dig output lacks %q:\n%s", w, out)
		}
	}
}

func TestDigClusterNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, addr := startServer(t, Config{Registry: reg})

	out := dig(t, addr, "web.default.svc.cluster.local", "A")
	mustContain(t, out, "status: NOERROR", "flags: qr aa rd ra", "web.default.svc.cluster.local. 5 IN A\t10.96.0.20")

	out = dig(t, addr, "_http._tcp.web.default.svc.cluster.local", "SRV")
	mustContain(t, out, "status: NOERROR",
		"_http._tcp.web.default.svc.cluster.local. 5 IN SRV 0 100 80 web.default.svc.cluster.local.",
		"web.default.svc.cluster.local. 5 IN A\t10.96.0.20") // additional section

	out = dig(t, addr, "web.default.svc.cluster.local", "SRV")
	mustContain(t, out, "SRV 0 100 80 web.default.svc.cluster.local.", "SRV 0 100 9100 web.default.svc.cluster.local.")

	out = dig(t, addr, "_dns._udp.dns.kube-system.svc.cluster.local", "SRV", "+tcp")
	mustContain(t, out, "status: NOERROR", "SRV 0 100 53 dns.kube-system.svc.cluster.local.")

	out = dig(t, addr, "nope.default.svc.cluster.local", "A")
	mustContain(t, out, "status: NXDOMAIN")

	// A name that exists asked with another type: NOERROR, no answer, so
	// resolvers asking A and AAAA at once still use the A record.
	out = dig(t, addr, "web.default.svc.cluster.local", "AAAA")
	mustContain(t, out, "status: NOERROR", "ANSWER: 0")

	// Case does not matter.
	out = dig(t, addr, "WEB.Default.SVC.cluster.LOCAL", "A")
	mustContain(t, out, "IN A\t10.96.0.20")

	// Headless: the published endpoints, each also by its own name, and
	// SRV records per endpoint pointing at those names.
	out = dig(t, addr, "db.default.svc.cluster.local", "A")
	mustContain(t, out, "IN A\t10.244.1.3", "IN A\t10.244.2.3", "IN A\t10.244.1.7")
	mustContain(t, dig(t, addr, "db-0.db.default.svc.cluster.local", "A"), "db-0.db.default.svc.cluster.local. 5 IN A 10.244.1.3")
	mustContain(t, dig(t, addr, "10-244-1-7.db.default.svc.cluster.local", "A"), "IN A 10.244.1.7")
	out = dig(t, addr, "_pg._tcp.db.default.svc.cluster.local", "SRV")
	mustContain(t, out, "SRV 0 100 15432 db-0.db.default.svc.cluster.local.", "SRV 0 100 15432 db-1.db.default.svc.cluster.local.",
		"db-1.db.default.svc.cluster.local. 5 IN A 10.244.2.3")

	// ExternalName: a CNAME (the upstreams are not reachable here: no
	// records follow it).
	out = dig(t, addr, "search.default.svc.cluster.local", "A")
	mustContain(t, out, "status: NOERROR", "search.default.svc.cluster.local. 5 IN CNAME search.example.com.")

	if n := queryCount(t, reg, "A", "NOERROR"); n < 3 {
		t.Errorf("A/NOERROR queries counted: %v", n)
	}
	if n := queryCount(t, reg, "A", "NXDOMAIN"); n != 1 {
		t.Errorf("A/NXDOMAIN queries counted: %v", n)
	}
}

func queryCount(t testing.TB, reg *prometheus.Registry, typ, rcode string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tugboat_proxy_dns_queries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["type"] == typ && l["rcode"] == rcode {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestDigForwarding(t *testing.T) {
	up := fakeUpstream(t)
	_, addr := startServer(t, Config{Upstreams: []string{up}})
	out := dig(t, addr, "example.com", "A")
	mustContain(t, out, "status: NOERROR", "example.com. 60 IN A 192.0.2.1")
	if strings.Contains(out, " aa ") {
		t.Errorf("forwarded answer marked authoritative:\n%s", out)
	}
	out = dig(t, addr, "example.com", "A", "+tcp")
	mustContain(t, out, "192.0.2.1")
	// An ExternalName's CNAME is followed by the target's records from
	// the upstreams.
	out = dig(t, addr, "search.default.svc.cluster.local", "A")
	mustContain(t, out, "status: NOERROR", "search.default.svc.cluster.local. 5 IN CNAME search.example.com.", "search.example.com. 60 IN A 192.0.2.1")
}

func TestDigServfailWhenUpstreamsFail(t *testing.T) {
	// A dead upstream (nothing listens: refused at once) before a good one:
	// the good one answers.
	dead := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)).String()
	up := fakeUpstream(t)
	_, addr := startServer(t, Config{Upstreams: []string{dead, up}})
	mustContain(t, dig(t, addr, "example.com", "A"), "192.0.2.1")

	// Only dead upstreams: SERVFAIL, not silence.
	_, addr = startServer(t, Config{Upstreams: []string{dead}})
	mustContain(t, dig(t, addr, "example.com", "A"), "status: SERVFAIL")

	// An upstream that swallows queries: SERVFAIL once the budget (here
	// 300ms) is spent, well before dig's own 5 s timeout.
	silent, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	_, addr = startServer(t, Config{Upstreams: []string{silent.LocalAddr().String()}, ForwardTimeout: 300 * time.Millisecond})
	mustContain(t, dig(t, addr, "example.com", "A"), "status: SERVFAIL")

	// No upstream at all.
	_, addr = startServer(t, Config{})
	mustContain(t, dig(t, addr, "example.com", "A"), "status: SERVFAIL")
}

func TestReadResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	content := "# comment\nsearch example.org\nnameserver 192.0.2.53\nnameserver 127.0.0.53\nnameserver 10.96.0.10\nnameserver fe80::1%eth0\nnameserver 2001:db8::53\noptions ndots:2\n"
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	servers, dropped, err := ReadResolvConf(p, netip.MustParseAddr("10.96.0.10"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(servers, ",") != "192.0.2.53:53,[2001:db8::53]:53" {
		t.Errorf("servers %q", servers)
	}
	if len(dropped) != 3 {
		t.Errorf("dropped %q", dropped)
	}
	if _, _, err := ReadResolvConf(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "--resolv-conf") {
		t.Errorf("missing file: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	z := NewZone("cluster.local")
	good := netip.MustParseAddrPort("10.96.0.10:53")
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Zone: z}, "--cluster-dns"},
		{Config{Listen: netip.MustParseAddrPort("[::1]:53"), Zone: z}, "--cluster-dns"},
		{Config{Listen: good}, "Zone"},
		{Config{Listen: good, Zone: z, Upstreams: []string{"8.8.8.8"}}, "--upstream-dns"},
		{Config{Listen: good, Zone: z, ForwardTimeout: -1}, "--upstream-timeout"},
	} {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}
