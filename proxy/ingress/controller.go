// Package ingress is the Ingress datapath: every node's proxy serves the
// Ingresses (networking.k8s.io/v1) of the classes whose controller is
// tugboat.dev/ingress-controller (class tugboat, the default; an Ingress
// without class when that class is the default) on the node's HTTP and
// HTTPS ports, with net/http and its reverse proxy (no HTTP parser of its
// own), straight to the Services' ready endpoints (from EndpointSlices,
// round robin; no ClusterIP hop, as ingress-nginx does).
//
// Loop: informers for Ingresses and IngressClasses, and one per Secret an
// Ingress names in spec.tls (its own; Services, EndpointSlices and Nodes
// are the proxy's, through Source) only signal Changed. One goroutine then rebuilds the whole routing table and
// the certificate table from the caches (Build: pure, O(rules)), and swaps
// both in through atomic pointers. A request reads the current table once
// and keeps the backend it picked, so a rule or endpoint change never
// touches a request in flight or an open connection (HTTP keep-alive,
// streams, upgrades); the next request sees the new table. Certificates
// are chosen per handshake by SNI from the current certificate table, so a
// renewed Secret is served without a restart.
//
// Contract: a request matching no rule gets 404 (or the default backend);
// a backend whose Service or Service port does not exist, or that has no
// ready endpoint, answers 503 with a page naming the reason; an endpoint
// that fails answers 502. Each configuration problem (ServiceNotFound,
// ServicePortNotFound, NoEndpoints, BadTLSSecret: a missing, mistyped or
// unparsable kubernetes.io/tls Secret, whose hosts then get the default
// self-signed certificate) is an Event on the Ingress, sent when it
// appears and then at most every ten minutes while it lasts: no Event
// storm. status.loadBalancer.ingress lists the nodes' InternalIPs.
//
// One writer: every node's proxy serves traffic, but only the proxy
// holding the Lease kube-system/tugboat-ingress-status writes the
// Ingresses' status and Events (as ingress-nginx elects its status
// writer), so a cluster of N nodes reports a problem once, not N times,
// and the proxies do not fight over status. A proxy that becomes the
// holder forgets what it had reported and rebuilds, so the problems that
// last are reported by the new writer at once.
//
// Permissions (system:kube-proxy): read ingresses, ingressclasses,
// services, endpointslices and nodes, update ingresses/status, the Lease.
// Secrets: RBAC grants the proxy none; the apiserver's proxy authorizer
// (apiserver/auth AuthorizeProxySecret, as the node authorizer narrows a
// kubelet to its pods' Secrets) lets it get, and list or watch by
// metadata.name, only a Secret that an Ingress in its namespace names in
// spec.tls. So the proxy watches each such Secret by name (secrets.go)
// rather than listing all of them.
//
// Cost per request: one net/http server request and one Transport round
// trip on a kept-alive connection to the endpoint (up to 512 idle per
// endpoint, so concurrent requests do not dial): four socket syscalls,
// and the request and response headers parsed and copied by net/http.
// Tugboat's own part — one atomic load of the table, a host map lookup,
// an allocation-free element walk of the path, a round-robin counter, and
// the backend's reverse proxy and metric series made with the table, so
// that a request allocates only its status writer — is under 1% of the
// proxy's CPU profile under load (ServeHTTP 23.5% cumulative, of which
// httputil.ReverseProxy 22.7%). Of the rest: 29% the socket syscalls (23%
// the writes: on veth they include the kernel delivering the packet to
// the other side), about 10% GC (marking and assists), and net/http's
// server and Transport: header parsing and cloning, the hand-offs between
// a request's goroutines, the scheduler. The benchmarks:
//
//	flock /tmp/tugboat-bench.lock flock /tmp/tugboat-host.lock go test -run '^$' -bench IngressVsDirectNetns -benchtime 1x -count 3 ./proxy/
//	flock /tmp/tugboat-bench.lock go test -run '^$' -bench IngressVsDirect -benchtime 20000x -cpu 32 -benchmem ./proxy/ingress/
//
// The first is the real proxy between wrk and an echo pod in network
// namespaces, the second all in one process with a bare
// httputil.ReverseProxy as the floor; proxy/README has the numbers and
// what they mean: on a shared 2-core machine the proxy hop's CPU is taken
// from the backend and the client, so the rate through it is 0.22–0.42×
// of direct; with the backend limited to 100m, 0.59–0.90× (median 0.71):
// the 0.8× target is not met.
package ingress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/internal/netns"
)

// Defaults of the proxy's flags.
const (
	DefaultListen    = "0.0.0.0:80"
	DefaultTLSListen = "0.0.0.0:443"
	// StatusLease is the Lease whose holder writes status.loadBalancer.
	StatusLease = "tugboat-ingress-status"
	// eventEvery is how often a lasting problem is reported again.
	eventEvery = 10 * time.Minute
)

// Source is the proxy's caches the datapath reads (shared with the
// Service datapath). Calls must be safe from any goroutine.
type Source interface {
	Service(key string) (*v1.Service, bool)
	EndpointSlices(serviceKey string) []*v1.EndpointSlice
	Nodes() []*v1.Node
}

// Config configures the Ingress datapath.
type Config struct {
	// Listen is the HTTP address (--ingress-listen); TLSListen the HTTPS
	// one (--ingress-tls-listen). Empty: that listener is off.
	Listen, TLSListen string
	// NodeName is this node (the Events' source, the Lease candidate).
	NodeName string
	Client   *client.Client
	Source   Source
	// NetNS is the network namespace to listen and dial in (0: own).
	NetNS    int
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Controller serves Ingresses. Make it with New, connect the proxy's
// informers to Changed, then Run it.
type Controller struct {
	cfg      Config
	log      *slog.Logger
	metrics  *metrics
	recorder *record.Recorder

	// Shared by the backends' reverse proxies.
	transport *http.Transport
	buffers   *bufferPool
	proxyLog  *log.Logger

	ingresses *informer.Informer[*v1.Ingress]
	classes   *informer.Informer[*v1.IngressClass]
	secrets   *secretWatches

	table   atomic.Pointer[Table]
	certs   atomic.Pointer[certTable]
	changed chan struct{}
	status  chan struct{}

	mu       sync.Mutex
	leading  bool                 // holds the status Lease: writes Events
	reported map[string]time.Time // problem key -> last Event
	synced   map[string]int64     // Ingress -> generation last reported Sync
	ready    chan struct{}        // closed once serving
	addrs    [2]string            // the listeners' addresses, set before ready
}

// Ready is closed once the first table is built and the listeners are
// open.
func (c *Controller) Ready() <-chan struct{} { return c.ready }

// Addrs are the HTTP and HTTPS listeners' addresses (after Ready; "" when off).
func (c *Controller) Addrs() (http, https string) { return c.addrs[0], c.addrs[1] }

// New makes the controller and its informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Source == nil {
		return nil, errors.New("ingress: Client and Source are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	log := cfg.Logger.With("part", "ingress")
	c := &Controller{cfg: cfg, log: log, metrics: newMetrics(cfg.Registry),
		recorder:  record.New(cfg.Client, "ingress-controller", cfg.NodeName, cfg.Registry, log),
		ingresses: informer.New(client.For[*v1.Ingress](cfg.Client), informer.Options{Logger: log}),
		classes:   informer.New(client.For[*v1.IngressClass](cfg.Client), informer.Options{Logger: log}),
		changed:   make(chan struct{}, 1), status: make(chan struct{}, 1),
		reported: map[string]time.Time{}, synced: map[string]int64{}, ready: make(chan struct{}),
	}
	c.transport, c.buffers = newTransport(cfg.NetNS), &bufferPool{}
	c.proxyLog = slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	c.table.Store(&Table{})
	changed := func() { c.Changed() }
	c.ingresses.AddHandler(informer.Handler[*v1.Ingress]{OnAdd: func(*v1.Ingress) { changed() },
		OnUpdate: func(_, _ *v1.Ingress) { changed() }, OnDelete: func(*v1.Ingress) { changed() }})
	c.classes.AddHandler(informer.Handler[*v1.IngressClass]{OnAdd: func(*v1.IngressClass) { changed() },
		OnUpdate: func(_, _ *v1.IngressClass) { changed() }, OnDelete: func(*v1.IngressClass) { changed() }})
	c.secrets = newSecretWatches(cfg.Client, log, changed)
	return c, nil
}

// Changed asks for a rebuild (never blocks; changes coalesce).
func (c *Controller) Changed() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// NodesChanged asks for a status update (the nodes' addresses).
func (c *Controller) NodesChanged() { c.notifyStatus() }

func (c *Controller) notifyStatus() {
	select {
	case c.status <- struct{}{}:
	default:
	}
}

// Run serves until ctx ends: informers, the rebuild loop, the listeners
// (once the first table is built) and the status writer's campaign.
func (c *Controller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fallback, err := defaultCertificate()
	if err != nil {
		return err
	}
	c.certs.Store(&certTable{fallback: fallback})
	var wg sync.WaitGroup
	defer wg.Wait()
	c.secrets.start(ctx)
	defer c.secrets.wait()
	errc := make(chan error, 6)
	spawn := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("ingress %s: %w", name, err)
			}
		}()
	}
	spawn("events", func(ctx context.Context) error { c.recorder.Run(ctx); return nil })
	spawn("informer", c.ingresses.Run)
	spawn("informer", c.classes.Run)
	for _, synced := range []func(context.Context) bool{c.ingresses.WaitForSync, c.classes.WaitForSync} {
		if !synced(ctx) {
			return nil
		}
	}
	c.rebuild(fallback)
	spawn("rebuild", func(ctx context.Context) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-c.changed:
				c.rebuild(fallback)
			}
		}
	})
	// A port that cannot be bound (80 taken on a workstation) leaves
	// that listener off, logged, rather than taking the node's Service
	// datapath and DNS down with the proxy.
	if c.cfg.Listen != "" {
		if ln, err := c.listen(c.cfg.Listen); err != nil {
			c.log.Error("ingress HTTP listener off", "err", err)
		} else {
			c.addrs[0] = ln.Addr().String()
			spawn("http", func(ctx context.Context) error { return c.serve(ctx, ln, nil) })
		}
	}
	if c.cfg.TLSListen != "" {
		ln, err := c.listen(c.cfg.TLSListen)
		if err != nil {
			c.log.Error("ingress HTTPS listener off", "err", err)
		}
		tc := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"},
			GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
				return c.certs.Load().lookup(h.ServerName), nil
			}}
		if ln != nil {
			c.addrs[1] = ln.Addr().String()
			spawn("https", func(ctx context.Context) error { return c.serve(ctx, ln, tc) })
		}
	}
	close(c.ready)
	spawn("status", c.runStatus)
	c.log.Info("ingress serving", "http", c.cfg.Listen, "https", c.cfg.TLSListen)
	select {
	case <-ctx.Done():
		return nil
	case err := <-errc:
		return err
	}
}

func (c *Controller) listen(addr string) (ln net.Listener, err error) {
	err = netns.Do(c.cfg.NetNS, func() (err error) { ln, err = net.Listen("tcp", addr); return err })
	if err != nil {
		return nil, fmt.Errorf("ingress listener %s: %w", addr, err)
	}
	return ln, nil
}

// serve runs one listener; at ctx's end it stops accepting and gives open
// requests 5 s to finish.
func (c *Controller) serve(ctx context.Context, ln net.Listener, tc *tls.Config) error {
	srv := &http.Server{Handler: c, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, TLSConfig: tc,
		ErrorLog: slog.NewLogLogger(c.log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	var err error
	if tc != nil {
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// rebuild builds the tables from the caches, swaps them in and reports
// what is wrong.
func (c *Controller) rebuild(fallback *tls.Certificate) {
	t, problems := Build(Snapshot{Ingresses: c.ingresses.List(), Classes: c.classes.List(),
		Service: c.cfg.Source.Service, EndpointSlices: c.cfg.Source.EndpointSlices})
	c.wire(t)
	c.table.Store(t)
	c.secrets.set(secretKeys(t.served))
	certs, certProblems := buildCerts(t.served, c.secrets.Get, fallback)
	c.certs.Store(certs)
	c.metrics.served.Set(float64(len(t.served)))
	c.report(t.served, append(problems, certProblems...))
	c.metrics.rebuilds.Inc() // after report: a test waits on it
	c.notifyStatus()
}

// report sends the Events: Sync (Normal) when an Ingress is first served
// or its spec changed, a Warning per problem when it appears and every
// eventEvery while it lasts. Only the status Lease holder reports.
func (c *Controller) report(served []*v1.Ingress, problems []Problem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.leading {
		return
	}
	now := time.Now()
	seen := map[string]bool{}
	for _, ing := range served {
		key := v1.Key(ing)
		seen[key] = true
		if g, ok := c.synced[key]; !ok || g != ing.GetMetadata().GetGeneration() {
			c.recorder.Eventf(ing, record.Normal, "Sync", "Scheduled for sync")
			c.metrics.events.WithLabelValues("Sync").Inc()
			c.synced[key] = ing.GetMetadata().GetGeneration()
		}
	}
	for key := range c.synced {
		if !seen[key] {
			delete(c.synced, key)
		}
	}
	current := map[string]bool{}
	for _, p := range problems {
		key := v1.Key(p.Ingress) + "\x00" + p.Reason + "\x00" + p.Message
		if current[key] {
			continue
		}
		current[key] = true
		if last, ok := c.reported[key]; ok && now.Sub(last) < eventEvery {
			continue
		}
		c.reported[key] = now
		c.recorder.Eventf(p.Ingress, record.Warning, p.Reason, "%s", p.Message)
		c.metrics.events.WithLabelValues(p.Reason).Inc()
		c.log.Warn("ingress problem", "ingress", v1.Key(p.Ingress), "reason", p.Reason, "message", p.Message)
	}
	for key := range c.reported {
		if !current[key] {
			delete(c.reported, key) // gone: a recurrence is reported at once
		}
	}
}

// setLeading starts or ends this proxy's term as the writer of status
// and Events; either way it forgets what it reported, and a new term
// rebuilds so the lasting problems are reported at once.
func (c *Controller) setLeading(leading bool) {
	c.mu.Lock()
	c.leading = leading
	clear(c.reported)
	clear(c.synced)
	c.mu.Unlock()
	c.metrics.leader.Set(map[bool]float64{true: 1}[leading])
	if leading {
		c.Changed()
	}
}

// addresses is what status.loadBalancer.ingress says: every node's
// InternalIP, sorted.
func addresses(nodes []*v1.Node) []*v1.IngressLoadBalancerIngress {
	var ips []string
	for _, n := range nodes {
		for _, a := range n.GetStatus().GetAddresses() {
			if a.GetType() == "InternalIP" {
				ips = append(ips, a.GetAddress())
			}
		}
	}
	slices.Sort(ips)
	ips = slices.Compact(ips)
	out := make([]*v1.IngressLoadBalancerIngress, len(ips))
	for i, ip := range ips {
		out[i] = &v1.IngressLoadBalancerIngress{Ip: ip}
	}
	return out
}
