// Package proxy is the per-node service proxy: it makes Services work on
// its node. It programs the Service datapath into the kernel (package
// nftables: ClusterIP and NodePort load balancing with DNAT), routes the
// node's pods to the other nodes' pod CIDRs (package routes), serves
// cluster DNS for the node's pods (package dns) and the health check node
// ports of externalTrafficPolicy Local Services (package healthcheck).
//
// Loop: informers for Services, EndpointSlices and Nodes feed the three parts;
// handlers only record what changed (datapath.Changed, zone updates,
// routes.Changed, healthcheck.Changed). Run waits for the caches to sync, then runs the
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
	"github.com/tugboat/tugboat/proxy/healthcheck"
	"github.com/tugboat/tugboat/proxy/ingress"
	"github.com/tugboat/tugboat/proxy/netpol"
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
	// NetworkPolicy turns on the enforcement of NetworkPolicies for the
	// node's pods (--network-policy, default on; off when another agent
	// enforces them).
	NetworkPolicy bool
	// IngressListen and IngressTLSListen are where Ingresses are served
	// over HTTP and HTTPS (--ingress-listen, --ingress-tls-listen; empty:
	// off; both empty: no Ingress datapath).
	IngressListen, IngressTLSListen string
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
	eps := informer.New(client.For[*v1.EndpointSlice](cfg.Client), informer.Options{Logger: log})
	eps.AddIndex(indexService, sliceService)
	nodes := informer.New(client.For[*v1.Node](cfg.Client), informer.Options{Logger: log})

	dp, err := nftables.New(nftables.Config{Table: cfg.Table, ClusterCIDR: cfg.ClusterCIDR, NodeName: cfg.NodeName, NetNS: cfg.NetNS,
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
	informers := []interface {
		Run(context.Context) error
		WaitForSync(context.Context) bool
		HasSynced() bool
	}{svcs, eps, nodes}
	synced := func() bool {
		for _, inf := range informers {
			if !inf.HasSynced() {
				return false
			}
		}
		return true
	}
	// Health check node ports of externalTrafficPolicy Local Services.
	// Its endpoint count is the datapath's, as programmed (not the caches').
	hc, err := healthcheck.New(healthcheck.Config{NodeName: cfg.NodeName, Source: &source{svcs: svcs, eps: eps},
		LocalEndpoints: dp.LocalEndpoints, NetNS: cfg.NetNS, Healthy: synced, Logger: log})
	if err != nil {
		return err
	}
	svcs.AddHandler(informer.Handler[*v1.Service]{OnAdd: func(*v1.Service) { hc.Changed() },
		OnUpdate: func(old, s *v1.Service) {
			if healthcheck.HealthCheckNodePort(old) != healthcheck.HealthCheckNodePort(s) {
				hc.Changed()
			}
		}, OnDelete: func(*v1.Service) { hc.Changed() }})
	var ing *ingress.Controller
	if cfg.IngressListen != "" || cfg.IngressTLSListen != "" {
		ing, err = ingress.New(ingress.Config{Listen: cfg.IngressListen, TLSListen: cfg.IngressTLSListen, NodeName: cfg.NodeName,
			Client: cfg.Client, Source: &source{svcs: svcs, eps: eps, nodes: nodes}, NetNS: cfg.NetNS, Registry: cfg.Registry, Logger: log})
		if err != nil {
			return err
		}
		watchIngress(svcs, eps, nodes, ing)
	}
	var policyAgent *netpol.Agent
	if cfg.NetworkPolicy {
		ps := &policySource{
			pods:     informer.New(client.For[*v1.Pod](cfg.Client), informer.Options{Logger: log}),
			ns:       informer.New(client.For[*v1.Namespace](cfg.Client), informer.Options{Logger: log}),
			policies: informer.New(client.For[*v1.NetworkPolicy](cfg.Client), informer.Options{Logger: log}),
		}
		policyAgent, err = netpol.New(netpol.Config{NodeName: cfg.NodeName, ClusterDNS: cfg.ClusterDNS, Table: policyTable(cfg.Table),
			NetNS: cfg.NetNS, Source: ps, Registry: cfg.Registry, Logger: log})
		if err != nil {
			return err
		}
		watchPolicies(ps, policyAgent)
		informers = append(informers, ps.pods, ps.ns, ps.policies)
	}

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
	for _, inf := range informers {
		spawn("informer", inf.Run)
	}
	log.Info("waiting for the caches")
	for _, inf := range informers {
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
	spawn("health check node ports", hc.Run)
	if policyAgent != nil {
		spawn("network policy", policyAgent.Run)
	}
	if ing != nil {
		spawn("ingress", ing.Run)
	}
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

// policyTable is the network policy agent's table: the datapath's name
// with "-policy" (tugboat-policy).
func policyTable(table string) string {
	if table == "" {
		table = nftables.DefaultTable
	}
	return table + "-policy"
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

// indexService indexes EndpointSlices by their Service's key.
const indexService = "service"

// labelServiceName names a slice's Service (Kubernetes' label).
const labelServiceName = "kubernetes.io/service-name"

// sliceService is the indexService function: "namespace/service".
func sliceService(s *v1.EndpointSlice) []string {
	if n := s.GetMetadata().GetLabels()[labelServiceName]; n != "" {
		return []string{s.GetMetadata().GetNamespace() + "/" + n}
	}
	return nil
}

// watch connects the informers to the parts. Handlers only record.
func watch(svcs *informer.Informer[*v1.Service], eps *informer.Informer[*v1.EndpointSlice], nodes *informer.Informer[*v1.Node],
	dp *nftables.Datapath, rt *routes.Manager, zone *dns.Zone) {
	svcs.AddHandler(informer.Handler[*v1.Service]{
		OnAdd: func(s *v1.Service) { zone.SetService(s); dp.Changed(v1.Key(s)) },
		OnUpdate: func(old, s *v1.Service) {
			if !proto.Equal(old.GetSpec(), s.GetSpec()) {
				zone.SetService(s)
				dp.Changed(v1.Key(s))
			} else if !proto.Equal(old.GetStatus().GetLoadBalancer(), s.GetStatus().GetLoadBalancer()) {
				dp.Changed(v1.Key(s)) // the load-balancer addresses the datapath accepts
			}
		},
		OnDelete: func(s *v1.Service) {
			zone.DeleteService(s.GetMetadata().GetNamespace(), s.GetMetadata().GetName())
			dp.Changed(v1.Key(s))
		},
	})
	// A slice change republishes its Service's endpoints from all of the
	// Service's slices (the cache already holds the change).
	sliceChanged := func(s *v1.EndpointSlice) {
		for _, key := range sliceService(s) {
			setDNSEndpoints(zone, key, eps.ByIndex(indexService, key))
			dp.Changed(key)
		}
	}
	eps.AddHandler(informer.Handler[*v1.EndpointSlice]{
		OnAdd: sliceChanged,
		OnUpdate: func(old, s *v1.EndpointSlice) {
			if !slices.EqualFunc(old.GetEndpoints(), s.GetEndpoints(), func(a, b *v1.Endpoint) bool { return proto.Equal(a, b) }) ||
				!slices.EqualFunc(old.GetPorts(), s.GetPorts(), func(a, b *v1.EndpointSlicePort) bool { return proto.Equal(a, b) }) ||
				old.GetMetadata().GetLabels()[labelServiceName] != s.GetMetadata().GetLabels()[labelServiceName] {
				sliceChanged(old)
				sliceChanged(s)
			}
		},
		OnDelete: sliceChanged,
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

// setDNSEndpoints publishes the ready endpoints of the Service key's
// slices in the zone, with their hostnames and named ports (the slice
// controller marks every endpoint ready under publishNotReadyAddresses).
func setDNSEndpoints(zone *dns.Zone, key string, list []*v1.EndpointSlice) {
	ns, name, _ := strings.Cut(key, "/")
	var out []dns.Endpoint
	seen := map[netip.Addr]int{}
	for _, s := range list {
		if s.GetAddressType() != "IPv4" {
			continue
		}
		var ports []dns.EndpointPort
		for _, p := range s.GetPorts() {
			if p.GetName() != "" && p.GetPort() > 0 && p.GetPort() <= 65535 {
				ports = append(ports, dns.EndpointPort{Name: p.GetName(), Protocol: p.GetProtocol(), Port: uint16(p.GetPort())})
			}
		}
		for _, e := range s.GetEndpoints() {
			if c := e.GetConditions(); c != nil && c.Ready != nil && !c.GetReady() {
				continue
			}
			for _, a := range e.GetAddresses() {
				ip, err := netip.ParseAddr(a)
				if err != nil {
					continue
				}
				// One address in several slices (one per port set): one
				// endpoint with all its named ports.
				if i, ok := seen[ip]; ok {
					out[i].Ports = append(out[i].Ports, ports...)
					continue
				}
				seen[ip] = len(out)
				out = append(out, dns.Endpoint{IP: ip, Hostname: e.GetHostname(), Ports: slices.Clone(ports)})
			}
		}
	}
	if len(list) == 0 {
		zone.DeleteEndpoints(ns, name)
		return
	}
	zone.SetEndpoints(ns, name, out)
}

// source is the datapath's (and the Ingress datapath's) view of the
// informer caches.
type source struct {
	svcs  *informer.Informer[*v1.Service]
	eps   *informer.Informer[*v1.EndpointSlice]
	nodes *informer.Informer[*v1.Node]
}

func (s *source) Nodes() []*v1.Node { return s.nodes.List() }

// watchIngress rebuilds the Ingress routing table on every Service and
// EndpointSlice change (its rebuilds coalesce), and its status on node
// address changes.
func watchIngress(svcs *informer.Informer[*v1.Service], eps *informer.Informer[*v1.EndpointSlice], nodes *informer.Informer[*v1.Node], c *ingress.Controller) {
	svcs.AddHandler(informer.Handler[*v1.Service]{OnAdd: func(*v1.Service) { c.Changed() },
		OnUpdate: func(_, _ *v1.Service) { c.Changed() }, OnDelete: func(*v1.Service) { c.Changed() }})
	eps.AddHandler(informer.Handler[*v1.EndpointSlice]{OnAdd: func(*v1.EndpointSlice) { c.Changed() },
		OnUpdate: func(_, _ *v1.EndpointSlice) { c.Changed() }, OnDelete: func(*v1.EndpointSlice) { c.Changed() }})
	nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: func(*v1.Node) { c.NodesChanged() },
		OnUpdate: func(old, n *v1.Node) {
			if !slices.EqualFunc(old.GetStatus().GetAddresses(), n.GetStatus().GetAddresses(), func(a, b *v1.NodeAddress) bool { return proto.Equal(a, b) }) {
				c.NodesChanged()
			}
		}, OnDelete: func(*v1.Node) { c.NodesChanged() }})
}

func (s *source) Service(key string) (*v1.Service, bool) { return s.svcs.Get(key) }
func (s *source) EndpointSlices(key string) []*v1.EndpointSlice {
	return s.eps.ByIndex(indexService, key)
}
func (s *source) ServiceKeys() []string {
	list := s.svcs.List()
	out := make([]string, len(list))
	for i, o := range list {
		out[i] = v1.Key(o)
	}
	return out
}
