// Package proxy is the per-node service proxy: it makes Services work on
// its node. It programs the Service datapath into the kernel (package
// nftables: ClusterIP and NodePort load balancing with DNAT), routes the
// node's pods to the other nodes' pod CIDRs (package routes) and serves
// cluster DNS for the node's pods (package dns).
//
// Loop: informers for Services, Endpoints and Nodes feed the three parts;
// handlers only record what changed (datapath.Changed, zone updates,
// routes.Changed). Run waits for the caches to sync, then runs the
// datapath (a full sync, then incremental batches), the route reconciler
// and the DNS server until ctx ends or one of them fails.
//
// Contract: what the proxy installs outlives it (rules and routes keep
// working while it restarts; the next start resyncs them, removing stale
// ones); Cleanup (`proxy --cleanup`) removes all of it: the nftables table,
// the pod CIDR routes and the cluster DNS address.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/metricsserver"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/proxy/dns"
	"github.com/tugboat/tugboat/proxy/nftables"
	"github.com/tugboat/tugboat/proxy/routes"
)

// Defaults.
const (
	DefaultClusterCIDR   = "10.244.0.0/16"
	DefaultClusterDNS    = "10.96.0.10"
	DefaultClusterDomain = "cluster.local"
	DefaultResolvConf    = "/etc/resolv.conf"
	DefaultMetricsListen = "127.0.0.1:10249"
)

// Config configures the proxy of one node.
type Config struct {
	// Client reaches the apiserver. Required.
	Client *client.Client
	// NodeName is this node's Node object (--node-name). Required.
	NodeName string
	// NodeIP, if set, is the source address of the node's own traffic to
	// other nodes' pods (--node-ip); it must be an address of the node.
	NodeIP netip.Addr
	// ClusterCIDR is the pods' address range (--cluster-cidr): Service
	// traffic from outside it is masqueraded.
	ClusterCIDR netip.Prefix
	// ClusterDNS is the address the DNS server listens on, port 53
	// (--cluster-dns); the proxy puts it on the node's loopback link.
	ClusterDNS netip.Addr
	// ClusterDomain is the zone the DNS server answers (--cluster-domain).
	ClusterDomain string
	// UpstreamDNS are the servers other names are forwarded to
	// (--upstream-dns, "ip:port"); empty: the nameservers of ResolvConf.
	UpstreamDNS []string
	// ResolvConf is read for upstreams when UpstreamDNS is empty
	// (--resolv-conf).
	ResolvConf string
	// UpstreamTimeout bounds the forwarding of one query (--upstream-timeout).
	UpstreamTimeout time.Duration
	// MetricsListen serves /metrics and /healthz (--metrics-listen; empty: off).
	MetricsListen string
	// Table is the nftables table (default "tugboat").
	Table string
	// FullSyncPeriod is how often the table is rebuilt whole (--full-sync-period).
	FullSyncPeriod time.Duration
	// NetNS is an open file descriptor of the network namespace to program
	// and serve in; 0: the process's own (tests use their own namespaces).
	NetNS int
	// Registry receives the metrics; nil: a new one.
	Registry *prometheus.Registry
	Logger   *slog.Logger
}

// Validate names the first bad field or flag.
func (c *Config) Validate() error {
	switch {
	case c.Client == nil:
		return errors.New("proxy: Client: required (--server)")
	case c.NodeName == "":
		return errors.New("--node-name: required")
	case !c.ClusterCIDR.IsValid() || !c.ClusterCIDR.Addr().Is4():
		return fmt.Errorf("--cluster-cidr %q: want an IPv4 CIDR such as %s", c.ClusterCIDR, DefaultClusterCIDR)
	case !c.ClusterDNS.IsValid() || !c.ClusterDNS.Is4():
		return fmt.Errorf("--cluster-dns %q: want an IPv4 address such as %s", c.ClusterDNS, DefaultClusterDNS)
	case c.NodeIP.IsValid() && !c.NodeIP.Is4():
		return fmt.Errorf("--node-ip %s: want an IPv4 address", c.NodeIP)
	case c.ClusterDomain == "" || strings.Contains(c.ClusterDomain, " "):
		return fmt.Errorf("--cluster-domain %q: want a domain such as %s", c.ClusterDomain, DefaultClusterDomain)
	case len(c.UpstreamDNS) == 0 && c.ResolvConf == "":
		return errors.New("--upstream-dns or --resolv-conf: one is required")
	case c.UpstreamTimeout < 0:
		return fmt.Errorf("--upstream-timeout %s: must not be negative", c.UpstreamTimeout)
	}
	for _, u := range c.UpstreamDNS {
		if _, err := netip.ParseAddrPort(u); err != nil {
			return fmt.Errorf("--upstream-dns %q: want ip:port", u)
		}
	}
	return nil
}

// Run runs the proxy until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	log := cfg.Logger.With("node", cfg.NodeName)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	svcs := informer.New(client.For[*v1.Service](cfg.Client), informer.Options{Logger: log})
	eps := informer.New(client.For[*v1.Endpoints](cfg.Client), informer.Options{Logger: log})
	nodes := informer.New(client.For[*v1.Node](cfg.Client), informer.Options{Logger: log})

	dp, err := nftables.New(nftables.Config{Table: cfg.Table, ClusterCIDR: cfg.ClusterCIDR, NetNS: cfg.NetNS,
		Source: &source{svcs: svcs, eps: eps}, FullSyncPeriod: cfg.FullSyncPeriod, Registry: cfg.Registry, Logger: log})
	if err != nil {
		return err
	}
	rt, err := routes.New(routes.Config{NodeName: cfg.NodeName, SourceIP: cfg.NodeIP, Nodes: nodes, NetNS: cfg.NetNS,
		Registry: cfg.Registry, Logger: log})
	if err != nil {
		return err
	}
	upstreams, err := upstreamsOf(cfg, log)
	if err != nil {
		return err
	}
	zone := dns.NewZone(cfg.ClusterDomain)
	dnsSrv, err := dns.NewServer(dns.Config{Listen: netip.AddrPortFrom(cfg.ClusterDNS, 53), Zone: zone, Upstreams: upstreams,
		ForwardTimeout: cfg.UpstreamTimeout, NetNS: cfg.NetNS, Registry: cfg.Registry, Logger: log})
	if err != nil {
		return err
	}
	watch(svcs, eps, nodes, dp, rt, zone)

	var wg sync.WaitGroup
	errc := make(chan error, 8)
	spawn := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	synced := func() bool { return svcs.HasSynced() && eps.HasSynced() && nodes.HasSynced() }
	if cfg.MetricsListen != "" {
		spawn("metrics", func(ctx context.Context) error {
			return metricsserver.Serve(ctx, cfg.MetricsListen, cfg.Registry, func(context.Context) error {
				if !synced() {
					return errors.New("caches not synced")
				}
				return nil
			})
		})
	}
	spawn("services informer", svcs.Run)
	spawn("endpoints informer", eps.Run)
	spawn("nodes informer", nodes.Run)
	log.Info("waiting for the caches")
	for _, inf := range []interface{ WaitForSync(context.Context) bool }{svcs, eps, nodes} {
		if !inf.WaitForSync(ctx) {
			return firstError(errc)
		}
	}
	if err := dns.EnsureAddress(cfg.NetNS, cfg.ClusterDNS); err != nil {
		return err
	}
	spawn("datapath", dp.Run)
	spawn("routes", rt.Run)
	spawn("dns", dnsSrv.Run)
	log.Info("proxy running", "clusterCIDR", cfg.ClusterCIDR, "clusterDNS", cfg.ClusterDNS, "domain", cfg.ClusterDomain)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

func firstError(errc chan error) error {
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// upstreamsOf returns the forwarding targets: the flag's, or resolv.conf's.
func upstreamsOf(cfg Config, log *slog.Logger) ([]string, error) {
	if len(cfg.UpstreamDNS) > 0 {
		return cfg.UpstreamDNS, nil
	}
	servers, dropped, err := dns.ReadResolvConf(cfg.ResolvConf, cfg.ClusterDNS)
	if err != nil {
		return nil, err
	}
	for _, d := range dropped {
		log.Warn("upstream DNS server left out", "resolvConf", cfg.ResolvConf, "server", d)
	}
	if len(servers) == 0 {
		log.Warn("no upstream DNS server: names outside the cluster domain get SERVFAIL", "resolvConf", cfg.ResolvConf)
	}
	return servers, nil
}

// watch connects the informers to the parts. Handlers only record.
func watch(svcs *informer.Informer[*v1.Service], eps *informer.Informer[*v1.Endpoints], nodes *informer.Informer[*v1.Node],
	dp *nftables.Datapath, rt *routes.Manager, zone *dns.Zone) {
	svcs.AddHandler(informer.Handler[*v1.Service]{
		OnAdd: func(s *v1.Service) { zone.SetService(s); dp.Changed(v1.Key(s)) },
		OnUpdate: func(old, s *v1.Service) {
			if !proto.Equal(old.GetSpec(), s.GetSpec()) {
				zone.SetService(s)
				dp.Changed(v1.Key(s))
			}
		},
		OnDelete: func(s *v1.Service) {
			zone.DeleteService(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())
			dp.Changed(v1.Key(s))
		},
	})
	eps.AddHandler(informer.Handler[*v1.Endpoints]{
		OnAdd: func(e *v1.Endpoints) { setDNSEndpoints(zone, e); dp.Changed(v1.Key(e)) },
		OnUpdate: func(old, e *v1.Endpoints) {
			if !slices.EqualFunc(old.GetSubsets(), e.GetSubsets(), func(a, b *v1.EndpointSubset) bool { return proto.Equal(a, b) }) {
				setDNSEndpoints(zone, e)
				dp.Changed(v1.Key(e))
			}
		},
		OnDelete: func(e *v1.Endpoints) {
			zone.DeleteEndpoints(e.GetMetadata().GetNamespace(), e.GetMetadata().GetName())
			dp.Changed(v1.Key(e))
		},
	})
	nodeChanged := func(*v1.Node) { rt.Changed() }
	nodes.AddHandler(informer.Handler[*v1.Node]{
		OnAdd: nodeChanged,
		OnUpdate: func(old, n *v1.Node) {
			if old.GetSpec().GetPodCidr() != n.GetSpec().GetPodCidr() || !slices.Equal(old.GetSpec().GetPodCidrs(), n.GetSpec().GetPodCidrs()) ||
				!slices.EqualFunc(old.GetStatus().GetAddresses(), n.GetStatus().GetAddresses(), func(a, b *v1.NodeAddress) bool { return proto.Equal(a, b) }) {
				rt.Changed()
			}
		},
		OnDelete: nodeChanged,
	})
}

// setDNSEndpoints publishes the ready addresses of e in the zone, with
// their hostnames and named ports.
func setDNSEndpoints(zone *dns.Zone, e *v1.Endpoints) {
	var out []dns.Endpoint
	for _, ss := range e.GetSubsets() {
		var ports []dns.EndpointPort
		for _, p := range ss.GetPorts() {
			if p.GetName() != "" && p.GetPort() > 0 && p.GetPort() <= 65535 {
				ports = append(ports, dns.EndpointPort{Name: p.GetName(), Protocol: p.GetProtocol(), Port: uint16(p.GetPort())})
			}
		}
		for _, a := range ss.GetAddresses() {
			if ip, err := netip.ParseAddr(a.GetIp()); err == nil {
				out = append(out, dns.Endpoint{IP: ip, Hostname: a.GetHostname(), Ports: ports})
			}
		}
	}
	zone.SetEndpoints(e.GetMetadata().GetNamespace(), e.GetMetadata().GetName(), out)
}

// source is the datapath's view of the informer caches.
type source struct {
	svcs *informer.Informer[*v1.Service]
	eps  *informer.Informer[*v1.Endpoints]
}

func (s *source) Service(key string) (*v1.Service, bool)     { return s.svcs.Get(key) }
func (s *source) Endpoints(key string) (*v1.Endpoints, bool) { return s.eps.Get(key) }
func (s *source) ServiceKeys() []string {
	list := s.svcs.List()
	out := make([]string, len(list))
	for i, o := range list {
		out[i] = v1.Key(o)
	}
	return out
}
