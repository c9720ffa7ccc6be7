package proxy

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/proxy/dns"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
	"github.com/tugboat/tugboat/proxy/nftables"
	"github.com/tugboat/tugboat/proxy/routes"
)

func testLogger() *slog.Logger {
	if os.Getenv("TUGBOAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func node(name, podCIDR, ip string) *v1.Node {
	return &v1.Node{Metadata: &v1.ObjectMeta{Name: name}, Spec: &v1.NodeSpec{PodCidr: podCIDR},
		Status: &v1.NodeStatus{Addresses: []*v1.NodeAddress{{Type: "InternalIP", Address: ip}}}}
}

func service(name string, port int32) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []*v1.ServicePort{{Name: "http", Port: port, TargetPort: "8080"}}}}
}

// endpoints is the one EndpointSlice (named as the Service) of Service
// name, with ready endpoints ips on port http 8080.
func endpoints(name string, ips ...string) *v1.EndpointSlice {
	var eps []*v1.Endpoint
	for _, ip := range ips {
		eps = append(eps, &v1.Endpoint{Addresses: []string{ip}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)}})
	}
	return &v1.EndpointSlice{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name, Labels: map[string]string{labelServiceName: name}},
		AddressType: "IPv4", Endpoints: eps,
		Ports: []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(8080), Protocol: proto.String("TCP")}}}
}

// running is a proxy started by a test.
type running struct {
	cancel context.CancelFunc
	done   chan error
	reg    *prometheus.Registry
}

func (r *running) stop(t testing.TB) {
	t.Helper()
	r.cancel()
	if err := <-r.done; err != nil {
		t.Errorf("proxy.Run: %v", err)
	}
}

func start(t testing.TB, c *client.Client, l *nstest.Lab, opts ...func(*Config)) *running {
	reg := prometheus.NewRegistry()
	cfg := Config{Client: c, NodeName: "node-a", ClusterCIDR: netip.MustParsePrefix("10.244.0.0/16"),
		ClusterDNS: netip.MustParseAddr("10.96.0.10"), ClusterDomain: "cluster.local",
		UpstreamDNS: []string{nstest.PeerIP + ":53"}, UpstreamTimeout: 300 * time.Millisecond,
		NetNS: l.Node.Fd(), NetworkPolicy: true, Registry: reg, Logger: testLogger()}
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), reg: reg}
	go func() { r.done <- Run(ctx, cfg) }()
	return r
}

func dig(ns *nstest.NS, args ...string) (string, error) {
	return ns.Exec(context.Background(), "dig", append([]string{"@10.96.0.10", "+time=2", "+tries=1", "+noall", "+comments", "+answer"}, args...)...)
}

func TestProxyAgainstAPIServer(t *testing.T) {
	nstest.RequireRoot(t)
	srv := apiservertest.Start(t)
	ctx := context.Background()
	l := nstest.NewLab(t, 2)
	nstest.Serve(t, l.Pods[0], "pod1", ":8080")
	nstest.Serve(t, l.Pods[1], "pod2", ":8080")

	nodes, svcs, epsAPI := client.For[*v1.Node](srv.Client), client.For[*v1.Service](srv.Client), client.For[*v1.EndpointSlice](srv.Client)
	for _, n := range []*v1.Node{node("node-a", nstest.PodCIDR, nstest.NodeIP), node("node-b", "10.244.2.0/24", nstest.PeerIP)} {
		if _, err := nodes.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	web, err := svcs.Create(ctx, service("web", 80))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := epsAPI.Create(ctx, endpoints("web", nstest.PodIP(0), nstest.PodIP(1))); err != nil {
		t.Fatal(err)
	}
	webAddr := web.Spec.ClusterIp + ":80"

	p := start(t, srv.Client, l)
	stopped := false
	defer func() {
		if !stopped {
			p.stop(t)
		}
	}()

	// DNS from a pod, through its default route to the node.
	wait.Eventually(t, 20*time.Second, "DNS from a pod", func() error {
		out, err := dig(l.Pods[0], "web.default.svc.cluster.local")
		if err != nil || !strings.Contains(out, web.Spec.ClusterIp) {
			return fmt.Errorf("dig: %v\n%s", err, out)
		}
		return nil
	})
	if out, _ := dig(l.Pods[0], "nope.default.svc.cluster.local"); !strings.Contains(out, "NXDOMAIN") {
		t.Errorf("unknown name:\n%s", out)
	}
	if out, _ := dig(l.Pods[0], "example.com"); !strings.Contains(out, "SERVFAIL") {
		t.Errorf("name outside the cluster with a dead upstream:\n%s", out)
	}

	// The ClusterIP reaches both endpoints.
	seen := map[string]bool{}
	wait.Eventually(t, 10*time.Second, "the ClusterIP reaching both endpoints", func() error {
		got, err := nstest.Ask(l.Pods[0], webAddr)
		if err != nil {
			return err
		}
		seen[strings.Fields(got)[0]] = true
		if len(seen) < 2 {
			return fmt.Errorf("only %v answered so far", seen)
		}
		return nil
	})

	// The route to node-b's pods.
	wait.Eventually(t, 10*time.Second, "the route to node-b's pods", func() error {
		rs, err := l.Node.NL.RouteListFiltered(unix.AF_INET, &netlink.Route{Protocol: routes.RouteProtocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return err
		}
		if len(rs) != 1 || rs[0].Dst.String() != "10.244.2.0/24" || rs[0].Gw.String() != nstest.PeerIP {
			return fmt.Errorf("routes %v", rs)
		}
		return nil
	})

	// An endpoint leaves: once programmed, no request reaches it.
	if _, err := epsAPI.Mutate(ctx, "default", "web", false, func(e *v1.EndpointSlice) error {
		e.Endpoints = endpoints("web", nstest.PodIP(1)).Endpoints
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "only pod2 answering", func() error {
		for i := 0; i < 10; i++ {
			got, err := nstest.Ask(l.Pods[0], webAddr)
			if err != nil || !strings.HasPrefix(got, "pod2 ") {
				return fmt.Errorf("got %q, %v", got, err)
			}
		}
		return nil
	})

	// Restart: a Service deleted and another created while the proxy is
	// down; the new proxy leaves no stale rule.
	p.stop(t)
	stopped = true
	if _, err := svcs.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := epsAPI.Delete(ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := nstest.Ask(l.Pods[0], webAddr); err != nil || !strings.HasPrefix(got, "pod2 ") {
		t.Fatalf("rules must keep working while the proxy is down: %q %v", got, err)
	}
	api, err := svcs.Create(ctx, service("api", 81))
	if err != nil {
		t.Fatal(err)
	}
	p = start(t, srv.Client, l)
	stopped = false
	wait.Eventually(t, 20*time.Second, "the table after the restart", func() error {
		out, err := l.Node.Exec(ctx, "nft", "list", "table", "ip", nftables.DefaultTable)
		if err != nil {
			return err
		}
		if strings.Contains(out, web.Spec.ClusterIp+" ") || strings.Contains(out, "svc-default/web/") || !strings.Contains(out, api.Spec.ClusterIp+" . tcp . 81") {
			return fmt.Errorf("table after restart:\n%s", out)
		}
		return nil
	})
	// api has no endpoints: refused at once.
	if _, err := nstest.Ask(l.Pods[0], api.Spec.ClusterIp+":81"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("service without endpoints: %v", err)
	}

	p.stop(t)
	stopped = true
	if err := Cleanup("", l.Node.Fd(), testLogger()); err != nil {
		t.Fatal(err)
	}
	if ok, err := nftables.TableExists("", l.Node.Fd()); ok || err != nil {
		t.Errorf("table left after cleanup: %v %v", ok, err)
	}
	if n, err := routes.Cleanup(l.Node.Fd()); n != 0 || err != nil {
		t.Errorf("routes left after cleanup: %d %v", n, err)
	}
	if a, err := dns.RemoveAddresses(l.Node.Fd()); len(a) != 0 || err != nil {
		t.Errorf("DNS address left after cleanup: %v %v", a, err)
	}
}

func TestConfigValidate(t *testing.T) {
	c, err := client.New(client.Config{Server: "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	good := func() Config {
		return Config{Client: c, NodeName: "n", ClusterCIDR: netip.MustParsePrefix(DefaultClusterCIDR),
			ClusterDNS: netip.MustParseAddr(DefaultClusterDNS), ClusterDomain: DefaultClusterDomain, ResolvConf: DefaultResolvConf}
	}
	if err := func() error { g := good(); return g.Validate() }(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.NodeName = "" }, "--node-name"},
		{func(c *Config) { c.ClusterCIDR = netip.Prefix{} }, "--cluster-cidr"},
		{func(c *Config) { c.ClusterDNS = netip.MustParseAddr("::1") }, "--cluster-dns"},
		{func(c *Config) { c.NodeIP = netip.MustParseAddr("::1") }, "--node-ip"},
		{func(c *Config) { c.ClusterDomain = "" }, "--cluster-domain"},
		{func(c *Config) { c.ResolvConf = "" }, "--upstream-dns or --resolv-conf"},
		{func(c *Config) { c.UpstreamDNS = []string{"8.8.8.8"} }, "--upstream-dns"},
		{func(c *Config) { c.UpstreamTimeout = -1 }, "--upstream-timeout"},
	} {
		cfg := good()
		tt.mut(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("got %v, want an error naming %s", err, tt.want)
		}
	}
}

func TestFlags(t *testing.T) {
	f := Flags{ClusterCIDR: "10.244.0.0/16", ClusterDNS: "10.96.0.10", UpstreamDNS: "192.0.2.1, 192.0.2.2:5353"}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cfg.UpstreamDNS, []string{"192.0.2.1:53", "192.0.2.2:5353"}) {
		t.Errorf("upstreams %q", cfg.UpstreamDNS)
	}
	for _, bad := range []struct {
		f    Flags
		want string
	}{
		{Flags{ClusterCIDR: "10.244.0.0", ClusterDNS: "10.96.0.10"}, "--cluster-cidr"},
		{Flags{ClusterCIDR: "10.244.0.0/16", ClusterDNS: "x"}, "--cluster-dns"},
		{Flags{ClusterCIDR: "10.244.0.0/16", ClusterDNS: "10.96.0.10", NodeIP: "y"}, "--node-ip"},
		{Flags{ClusterCIDR: "10.244.0.0/16", ClusterDNS: "10.96.0.10", UpstreamDNS: "dns.google"}, "--upstream-dns"},
	} {
		if _, err := bad.f.Config(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: got %v, want an error naming %s", bad.f, err, bad.want)
		}
	}
}
