// Package routes gives a node's pods the rest of the cluster: it keeps, in
// the node's main routing table, a route to every other node's pod CIDR
// via that node's InternalIP (nodes share one L2 segment: a docker network,
// a subnet of lab VMs), and removes the route when the node goes away or
// its addresses change.
//
// Loop: Changed (called by the Node informer's handlers) wakes Run; Run
// computes the desired routes from all Nodes (Desired, pure), lists the
// routes it owns in the kernel (those of protocol RouteProtocol) and adds,
// replaces and deletes until they match. It also reconciles every
// ResyncPeriod, so a route deleted by hand comes back. Routes of any other
// protocol are never touched.
package routes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// RouteProtocol marks the routes the proxy owns (`ip route show proto 116`).
const RouteProtocol netlink.RouteProtocol = 116

// Route is one desired route: pod CIDR via a node's address.
type Route struct {
	Dst  netip.Prefix
	Via  netip.Addr
	Node string
}

// Desired is the routes the node self needs (pure): one per other node
// with an IPv4 pod CIDR and an IPv4 InternalIP, sorted by destination.
// Problems that leave a node without a route are reported, one per node.
func Desired(nodes []*v1.Node, self string) ([]Route, []string) {
	var own []netip.Prefix
	for _, n := range nodes {
		if n.GetMetadata().GetName() == self {
			own = podCIDRs(n)
		}
	}
	var out []Route
	var problems []string
	for _, n := range nodes {
		name := n.GetMetadata().GetName()
		if name == self {
			continue
		}
		cidrs := podCIDRs(n)
		if len(cidrs) == 0 {
			continue // not given one yet: nothing to route
		}
		via, ok := internalIP(n)
		if !ok {
			problems = append(problems, fmt.Sprintf("node %s: no IPv4 InternalIP in status.addresses", name))
			continue
		}
		for _, c := range cidrs {
			if slices.ContainsFunc(own, c.Overlaps) {
				problems = append(problems, fmt.Sprintf("node %s: pod CIDR %s overlaps this node's", name, c))
				continue
			}
			out = append(out, Route{Dst: c, Via: via, Node: name})
		}
	}
	slices.SortFunc(out, func(a, b Route) int { return a.Dst.Addr().Compare(b.Dst.Addr()) })
	return out, problems
}

func podCIDRs(n *v1.Node) []netip.Prefix {
	list := n.GetSpec().GetPodCidrs()
	if len(list) == 0 && n.GetSpec().GetPodCidr() != "" {
		list = []string{n.GetSpec().GetPodCidr()}
	}
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
			out = append(out, p.Masked())
		}
	}
	return out
}

func internalIP(n *v1.Node) (netip.Addr, bool) {
	for _, a := range n.GetStatus().GetAddresses() {
		if a.GetType() != "InternalIP" {
			continue
		}
		if ip, err := netip.ParseAddr(a.GetAddress()); err == nil && ip.Is4() {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// NodeLister lists the cluster's Nodes (the proxy's Node informer).
type NodeLister interface {
	List() []*v1.Node
}

// Config configures a Manager.
type Config struct {
	// NodeName is this node (--node-name). Required.
	NodeName string
	// SourceIP, if valid, is the preferred source address of the node's
	// own traffic over the routes (--node-ip).
	SourceIP netip.Addr
	// Nodes lists the cluster's Nodes. Required.
	Nodes NodeLister
	// NetNS is an open file descriptor of the namespace whose routes to
	// manage; 0: the process's own.
	NetNS int
	// ResyncPeriod is how often routes are reconciled without a change
	// (default 1m).
	ResyncPeriod time.Duration
	Registry     prometheus.Registerer
	Logger       *slog.Logger
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.NodeName == "" {
		return errors.New("--node-name: required")
	}
	if c.Nodes == nil {
		return errors.New("routes: Nodes: required")
	}
	if c.NetNS < 0 {
		return fmt.Errorf("routes: NetNS %d: not a file descriptor", c.NetNS)
	}
	return nil
}

// Manager keeps the routes to other nodes' pod CIDRs.
type Manager struct {
	cfg    Config
	log    *slog.Logger
	wake   chan struct{}
	routes prometheus.Gauge
	errs   prometheus.Counter
}

// New validates cfg and makes a Manager.
func New(cfg Config) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Manager{cfg: cfg, log: cfg.Logger.With("routes", cfg.NodeName), wake: make(chan struct{}, 1),
		routes: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tugboat_proxy_pod_cidr_routes",
			Help: "Routes to other nodes' pod CIDRs installed by the proxy."}),
		errs: prometheus.NewCounter(prometheus.CounterOpts{Name: "tugboat_proxy_pod_cidr_route_errors_total",
			Help: "Failures to add or delete a route to another node's pod CIDR."}),
	}
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{m.routes, m.errs} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// Changed asks Run to reconcile. It never blocks.
func (m *Manager) Changed() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Run reconciles the routes until ctx ends. Nodes must be synced first.
// Routes stay when ctx ends (pods keep reaching each other while the
// proxy restarts); Cleanup removes them.
func (m *Manager) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.ResyncPeriod)
	defer t.Stop()
	retry := time.Duration(0)
	for {
		if err := m.reconcile(); err != nil {
			retry = min(max(2*retry, 200*time.Millisecond), 10*time.Second)
			m.log.Warn("reconciling pod CIDR routes", "err", err, "retryIn", retry)
		} else {
			retry = 0
		}
		var again <-chan time.Time
		if retry > 0 {
			again = time.After(retry)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-m.wake:
		case <-t.C:
		case <-again:
		}
	}
}

func handle(nsFd int) (*netlink.Handle, error) {
	if nsFd == 0 {
		return netlink.NewHandle(unix.NETLINK_ROUTE)
	}
	return netlink.NewHandleAt(netns.NsHandle(nsFd), unix.NETLINK_ROUTE)
}

// owned lists the routes of RouteProtocol in the main table.
func owned(h *netlink.Handle) ([]netlink.Route, error) {
	return h.RouteListFiltered(unix.AF_INET, &netlink.Route{Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN},
		netlink.RT_FILTER_PROTOCOL|netlink.RT_FILTER_TABLE)
}

func (m *Manager) reconcile() error {
	want, problems := Desired(m.cfg.Nodes.List(), m.cfg.NodeName)
	for _, p := range problems {
		m.log.Warn("no route to a node's pods", "problem", p)
	}
	h, err := handle(m.cfg.NetNS)
	if err != nil {
		return err
	}
	defer h.Close()
	have, err := owned(h)
	if err != nil {
		return fmt.Errorf("listing routes: %w", err)
	}
	var errs []error
	wanted := map[netip.Prefix]bool{}
	installed := 0
	for _, r := range want {
		wanted[r.Dst] = true
		if slices.ContainsFunc(have, func(h netlink.Route) bool { return sameRoute(h, r, m.cfg.SourceIP) }) {
			installed++
			continue
		}
		nr := &netlink.Route{Dst: ipNet(r.Dst), Gw: r.Via.AsSlice(), Protocol: RouteProtocol, Table: unix.RT_TABLE_MAIN}
		if m.cfg.SourceIP.IsValid() {
			nr.Src = m.cfg.SourceIP.AsSlice()
		}
		if err := h.RouteReplace(nr); err != nil {
			m.errs.Inc()
			errs = append(errs, fmt.Errorf("route %s via %s (node %s): %w", r.Dst, r.Via, r.Node, err))
			continue
		}
		installed++
		m.log.Info("route to node's pods added", "node", r.Node, "podCIDR", r.Dst, "via", r.Via)
	}
	for _, hr := range have {
		dst, ok := prefixOf(hr.Dst)
		if ok && wanted[dst] {
			continue
		}
		if err := h.RouteDel(&hr); err != nil && !errors.Is(err, unix.ESRCH) {
			m.errs.Inc()
			errs = append(errs, fmt.Errorf("deleting route %s: %w", hr.Dst, err))
			continue
		}
		m.log.Info("route to a gone node's pods removed", "dst", hr.Dst, "via", hr.Gw)
	}
	m.routes.Set(float64(installed))
	return errors.Join(errs...)
}

func sameRoute(h netlink.Route, r Route, src netip.Addr) bool {
	dst, ok := prefixOf(h.Dst)
	gw, ok2 := netip.AddrFromSlice(h.Gw.To4())
	if src.IsValid() {
		if have, ok := netip.AddrFromSlice(h.Src.To4()); !ok || have != src {
			return false
		}
	}
	return ok && ok2 && dst == r.Dst && gw == r.Via
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	ip, ok := netip.AddrFromSlice(n.IP.To4())
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(ip, ones), true
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

// Cleanup deletes every route the proxy owns in the namespace nsFd (0:
// the process's own). It returns how many it deleted.
func Cleanup(nsFd int) (int, error) {
	h, err := handle(nsFd)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	have, err := owned(h)
	if err != nil {
		return 0, fmt.Errorf("listing routes: %w", err)
	}
	n := 0
	var errs []error
	for _, r := range have {
		if err := h.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("deleting route %s: %w", r.Dst, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
