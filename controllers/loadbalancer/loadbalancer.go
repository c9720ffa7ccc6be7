// Package loadbalancer is Tugboat's built-in load-balancer controller, the
// lab way (as k3s' ServiceLB and MetalLB's address allocation): it gives
// every Service of type LoadBalancer without a loadBalancerClass an
// external address in status.loadBalancer.ingress, and every node's proxy
// accepts traffic to that address on the Service's ports (proxy/nftables).
//
// Two modes:
//
//   - a pool (--lb-pool 192.168.100.240/29,10.0.0.50-10.0.0.60): each
//     Service gets one address of the pool, spec.loadBalancerIP if it asks
//     for one; the pool's addresses must reach some node (a route, or a
//     router's static route to the nodes): nothing answers ARP for them.
//     A pool that runs out leaves the Service without an address and says
//     so in an Event (AllocationFailed); it gets one once another Service
//     releases its address.
//   - no pool (the default): the nodes' InternalIPs, as k3s' ServiceLB
//     does — every Ready node's address, or with externalTrafficPolicy
//     Local only those of nodes with a ready endpoint of the Service. Two
//     such Services cannot share a port: the later one gets no address
//     (Event AllocationFailed naming the other).
//
// Loop (controller skeleton): Service events enqueue the Service; Node
// events enqueue every LoadBalancer Service (no-pool mode); EndpointSlice
// events enqueue their Service. sync computes the ingress and writes it
// with UpdateStatus when it differs; a Service that stops being a
// LoadBalancer (or goes) releases its address and its status is cleared.
// Allocations are rebuilt from the Services' status before the first
// sync, so a restarted controller keeps every address where it was.
package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Config configures the controller.
type Config struct {
	// Pool is the addresses handed out (--lb-pool): IPv4 CIDRs
	// ("192.168.100.240/29", network and broadcast addresses of prefixes
	// shorter than /31 left out) or ranges ("10.0.0.50-10.0.0.60").
	// Empty: the nodes' InternalIPs.
	Pool []string
}

// Validate names the first bad entry.
func (c *Config) Validate() error {
	_, err := parsePool(c.Pool)
	return err
}

// Controller is the load-balancer controller.
type Controller struct {
	svcs    controller.Source[*v1.Service]
	nodes   controller.Source[*v1.Node]
	slices  controller.Source[*v1.EndpointSlice]
	svcAPI  *client.Typed[*v1.Service]
	events  controller.Recorder
	loop    *controller.Controller
	log     *slog.Logger
	pool    *pool // nil: node addresses
	rebuilt sync.Once
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	ranges, err := parsePool(cfg.Pool)
	if err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		svcs: controller.For[*v1.Service](d.Informers), nodes: controller.For[*v1.Node](d.Informers),
		slices: controller.For[*v1.EndpointSlice](d.Informers), svcAPI: client.For[*v1.Service](d.Client),
		events: d.Recorder, log: log.With("controller", "loadbalancer"),
	}
	if len(ranges) > 0 {
		c.pool = newPool(ranges)
	}
	c.loop = controller.New(controller.Config{
		Name: "loadbalancer", Workers: 1, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.svcs.HasSynced, c.nodes.HasSynced, c.slices.HasSynced},
	})
	enqueue := func(s *v1.Service) { c.loop.EnqueueObject(s) }
	c.svcs.AddHandler(informer.Handler[*v1.Service]{
		OnAdd: enqueue,
		OnUpdate: func(old, s *v1.Service) {
			if !proto.Equal(old.GetSpec(), s.GetSpec()) || !proto.Equal(old.GetStatus().GetLoadBalancer(), s.GetStatus().GetLoadBalancer()) {
				enqueue(s)
			}
		},
		OnDelete: enqueue,
	})
	if c.pool == nil {
		all := func(*v1.Node) { c.enqueueAll() }
		c.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: all, OnUpdate: func(_, n *v1.Node) { all(n) }, OnDelete: all})
		slice := func(s *v1.EndpointSlice) {
			if n := s.GetMetadata().GetLabels()["kubernetes.io/service-name"]; n != "" {
				c.loop.Enqueue(s.GetMetadata().GetNamespace() + "/" + n)
			}
		}
		c.slices.AddHandler(informer.Handler[*v1.EndpointSlice]{OnAdd: slice, OnUpdate: func(_, s *v1.EndpointSlice) { slice(s) }, OnDelete: slice})
	}
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) enqueueAll() {
	for _, s := range c.svcs.List() {
		if ours(s) {
			c.loop.EnqueueObject(s)
		}
	}
}

// ours reports whether svc is a LoadBalancer this controller serves.
func ours(svc *v1.Service) bool {
	return svc.GetSpec().GetType() == "LoadBalancer" && svc.GetSpec().GetLoadBalancerClass() == "" &&
		svc.GetMetadata().GetDeletionTimestamp() == nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if c.pool != nil {
		c.rebuilt.Do(c.rebuild)
	}
	svc, ok := c.svcs.Get(key)
	if !ok || !ours(svc) {
		if c.pool != nil && c.pool.release(key) {
			for _, k := range c.pool.takeWaiting() {
				c.loop.Enqueue(k)
			}
		}
		if ok && svc.GetSpec().GetLoadBalancerClass() == "" && len(svc.GetStatus().GetLoadBalancer().GetIngress()) > 0 {
			return c.writeStatus(ctx, svc, nil) // no longer a LoadBalancer: its address goes
		}
		return nil
	}
	var ingress []*v1.LoadBalancerIngress
	var err error
	if c.pool != nil {
		ingress, err = c.fromPool(svc)
	} else {
		ingress, err = c.fromNodes(svc)
	}
	if err != nil {
		c.events.Eventf(svc, controller.Warning, "AllocationFailed", "Failed to allocate an address: %v", err)
		c.log.Warn("no address for a LoadBalancer Service", "service", key, "err", err)
		if len(svc.GetStatus().GetLoadBalancer().GetIngress()) > 0 {
			return c.writeStatus(ctx, svc, nil)
		}
		return nil // retried when an address or a port is freed
	}
	return c.writeStatus(ctx, svc, ingress)
}

// writeStatus sets status.loadBalancer.ingress if it differs.
func (c *Controller) writeStatus(ctx context.Context, svc *v1.Service, ingress []*v1.LoadBalancerIngress) error {
	want := &v1.LoadBalancerStatus{Ingress: ingress}
	if proto.Equal(svc.GetStatus().GetLoadBalancer(), want) || len(ingress) == 0 && len(svc.GetStatus().GetLoadBalancer().GetIngress()) == 0 {
		return nil
	}
	next := informer.Copy(svc)
	if next.Status == nil {
		next.Status = &v1.ServiceStatus{}
	}
	next.Status.LoadBalancer = want
	if _, err := c.svcAPI.UpdateStatus(ctx, next); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return fmt.Errorf("service %s changed while updating its status; retrying: %w", v1.Key(svc), err)
		}
		return fmt.Errorf("updating the status of service %s: %w", v1.Key(svc), err)
	}
	if len(ingress) > 0 {
		ips := make([]string, len(ingress))
		for i, in := range ingress {
			ips[i] = in.Ip
		}
		c.events.Eventf(svc, controller.Normal, "EnsuredLoadBalancer", "Ensured load balancer: %s", strings.Join(ips, ","))
	}
	return nil
}

// rebuild records the pool addresses the Services already hold.
func (c *Controller) rebuild() {
	svcs := c.svcs.List()
	slices.SortFunc(svcs, func(a, b *v1.Service) int {
		return a.GetMetadata().GetCreationTimestamp().AsTime().Compare(b.GetMetadata().GetCreationTimestamp().AsTime())
	})
	for _, s := range svcs {
		if !ours(s) {
			continue
		}
		for _, in := range s.GetStatus().GetLoadBalancer().GetIngress() {
			if ip, err := netip.ParseAddr(in.Ip); err == nil && c.pool.contains(ip) {
				if err := c.pool.take(v1.Key(s), ip); err != nil {
					c.log.Warn("two Services hold one address; the older keeps it", "service", v1.Key(s), "ip", ip)
				}
			}
		}
	}
}

func (c *Controller) fromPool(svc *v1.Service) ([]*v1.LoadBalancerIngress, error) {
	key := v1.Key(svc)
	ip, err := c.pool.allocate(key, svc.GetSpec().GetLoadBalancerIp())
	if err != nil {
		return nil, err
	}
	return []*v1.LoadBalancerIngress{{Ip: ip.String(), IpMode: "VIP"}}, nil
}

// fromNodes is the no-pool ingress: node InternalIPs.
func (c *Controller) fromNodes(svc *v1.Service) ([]*v1.LoadBalancerIngress, error) {
	if other := c.portHolder(svc); other != nil {
		return nil, fmt.Errorf("port %s is already served on the nodes' addresses by LoadBalancer Service %s", samePort(svc, other), v1.Key(other))
	}
	local := svc.GetSpec().GetExternalTrafficPolicy() == "Local"
	withEndpoint := map[string]bool{}
	if local {
		for _, s := range c.slices.List() {
			if s.GetMetadata().GetNamespace() != svc.GetMetadata().GetNamespace() || s.GetMetadata().GetLabels()["kubernetes.io/service-name"] != svc.GetMetadata().GetName() {
				continue
			}
			for _, e := range s.GetEndpoints() {
				if c := e.GetConditions(); c == nil || c.Ready == nil || c.GetReady() {
					withEndpoint[e.GetNodeName()] = true
				}
			}
		}
	}
	var ips []string
	for _, n := range c.nodes.List() {
		if !nodeReady(n) || local && !withEndpoint[n.GetMetadata().GetName()] {
			continue
		}
		for _, a := range n.GetStatus().GetAddresses() {
			if a.GetType() == "InternalIP" {
				if ip, err := netip.ParseAddr(a.GetAddress()); err == nil && ip.Is4() {
					ips = append(ips, ip.String())
					break
				}
			}
		}
	}
	if len(ips) == 0 {
		if local {
			return nil, errors.New("externalTrafficPolicy Local: no Ready node has a ready endpoint of the Service")
		}
		return nil, errors.New("no Ready node has an InternalIP")
	}
	slices.SortFunc(ips, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	out := make([]*v1.LoadBalancerIngress, len(ips))
	for i, ip := range ips {
		out[i] = &v1.LoadBalancerIngress{Ip: ip, IpMode: "VIP"}
	}
	return out, nil
}

// portHolder is an older LoadBalancer Service that serves one of svc's
// ports on the nodes' addresses, or nil.
func (c *Controller) portHolder(svc *v1.Service) *v1.Service {
	var holder *v1.Service
	for _, o := range c.svcs.List() {
		if !ours(o) || v1.Key(o) == v1.Key(svc) || samePort(svc, o) == "" || !older(o, svc) {
			continue
		}
		if holder == nil || older(o, holder) {
			holder = o
		}
	}
	return holder
}

func older(a, b *v1.Service) bool {
	ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
	if !ta.Equal(tb) {
		return ta.Before(tb)
	}
	return v1.Key(a) < v1.Key(b)
}

// samePort is "80/TCP" if a and b share a port and protocol, else "".
func samePort(a, b *v1.Service) string {
	for _, p := range a.GetSpec().GetPorts() {
		for _, q := range b.GetSpec().GetPorts() {
			if p.GetPort() == q.GetPort() && protocol(p) == protocol(q) {
				return fmt.Sprintf("%d/%s", p.GetPort(), protocol(p))
			}
		}
	}
	return ""
}

func protocol(p *v1.ServicePort) string {
	if p.GetProtocol() == "" {
		return "TCP"
	}
	return p.GetProtocol()
}

func nodeReady(n *v1.Node) bool {
	c := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
	return c != nil && c.Status == controller.True
}
