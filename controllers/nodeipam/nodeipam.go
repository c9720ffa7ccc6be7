// Package nodeipam is the node IPAM controller: it gives every Node a pod
// CIDR (spec.podCIDR and spec.podCIDRs) carved from the cluster CIDR,
// never the same one to two nodes, and takes it back when the node goes.
//
// Loop (on the controller skeleton, keyed by node name): before any worker
// starts, Prepare rebuilds the allocation map from the pod CIDRs of every
// existing node, so a restarted controller never hands out a range in use.
// Node events enqueue the node. Sync records a node's existing CIDR, or
// allocates the next free one and writes it with a read-modify-write that
// keeps a CIDR someone else set first; a node that is gone releases its
// CIDR. The allocation is remembered by node name until the node is gone,
// so a retried or stale sync writes the same CIDR again instead of taking
// a second one. When the cluster CIDR is exhausted the node gets a
// CIDRNotAvailable event and waits for a release.
package nodeipam

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Config says what to allocate from.
type Config struct {
	// ClusterCIDR is split into node CIDRs (--cluster-cidr, default 10.244.0.0/16).
	ClusterCIDR string
	// NodeCIDRMaskSize is the prefix length of each node's CIDR
	// (--node-cidr-mask-size, default 24).
	NodeCIDRMaskSize int
	// Workers is how many nodes sync at once (default 4).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	cidr := c.ClusterCIDR
	if cidr == "" {
		cidr = "10.244.0.0/16"
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return fmt.Errorf("--cluster-cidr %q: %v", c.ClusterCIDR, err)
	}
	mask := c.NodeCIDRMaskSize
	if mask == 0 {
		mask = 24
	}
	if mask < 0 {
		return fmt.Errorf("--node-cidr-mask-size: must be > 0, got %d", mask)
	}
	if _, err := NewCIDRSet(p, mask); err != nil {
		return fmt.Errorf("--cluster-cidr %s / --node-cidr-mask-size %d: %v", cidr, mask, err)
	}
	if c.Workers < 0 {
		return fmt.Errorf("node IPAM Workers: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller is the node IPAM controller.
type Controller struct {
	nodeAPI *client.Typed[*v1.Node]
	nodes   controller.Source[*v1.Node]
	events  controller.Recorder
	loop    *controller.Controller
	log     *slog.Logger

	allocated prometheus.Gauge
	failures  prometheus.Counter

	mu      sync.Mutex
	set     *CIDRSet
	byNode  map[string]netip.Prefix // the CIDR each node has or is being given
	waiting map[string]bool         // nodes waiting for a release
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.ClusterCIDR == "" {
		cfg.ClusterCIDR = "10.244.0.0/16"
	}
	if cfg.NodeCIDRMaskSize == 0 {
		cfg.NodeCIDRMaskSize = 24
	}
	if cfg.Workers == 0 {
		cfg.Workers = 4
	}
	set, err := NewCIDRSet(netip.MustParsePrefix(cfg.ClusterCIDR), cfg.NodeCIDRMaskSize)
	if err != nil {
		return nil, err
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		nodeAPI: client.For[*v1.Node](d.Client), nodes: controller.For[*v1.Node](d.Informers), events: d.Recorder,
		log: log.With("controller", "nodeipam"), set: set, byNode: map[string]netip.Prefix{}, waiting: map[string]bool{},
		allocated: controller.Register(d.Registry, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_controller_manager_pod_cidrs_allocated", Help: "Node pod CIDRs in use."})),
		failures: controller.Register(d.Registry, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_pod_cidr_allocation_failures_total", Help: "Nodes that could not get a pod CIDR (cluster CIDR full)."})),
	}
	c.loop = controller.New(controller.Config{
		Name: "nodeipam", Workers: cfg.Workers, Sync: c.sync, Prepare: c.prepare, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.nodes.HasSynced},
	})
	byName := func(n *v1.Node) { c.loop.Enqueue(n.GetMetadata().GetName()) }
	c.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: byName, OnDelete: byName, OnUpdate: func(old, cur *v1.Node) {
		if old.GetSpec().GetPodCidr() != cur.GetSpec().GetPodCidr() || len(old.GetSpec().GetPodCidrs()) != len(cur.GetSpec().GetPodCidrs()) ||
			old.GetMetadata().GetUid() != cur.GetMetadata().GetUid() {
			byName(cur)
		}
	}})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// prepare rebuilds the allocation map from the nodes as listed.
func (c *Controller) prepare(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	taken := map[netip.Prefix]string{}
	for _, n := range c.nodes.List() {
		name := n.GetMetadata().GetName()
		p, ok := c.parse(n)
		if !ok {
			continue
		}
		if other, dup := taken[p]; dup {
			c.log.Error("two nodes have the same pod CIDR; fix one by hand", "cidr", p, "node", name, "other", other)
			continue
		}
		taken[p] = name
		_ = c.set.Occupy(p)
		c.byNode[name] = p
	}
	c.allocated.Set(float64(c.set.InUse()))
	c.log.Info("allocation map rebuilt from existing nodes", "in_use", c.set.InUse(), "of", c.set.Size())
	return nil
}

// parse returns a node's pod CIDR if it is one of our subnets.
func (c *Controller) parse(n *v1.Node) (netip.Prefix, bool) {
	s := n.GetSpec().GetPodCidr()
	if s == "" {
		return netip.Prefix{}, false
	}
	p, err := netip.ParsePrefix(s)
	if err != nil || !c.set.Contains(p) {
		c.log.Warn("node has a pod CIDR outside the cluster CIDR; leaving it alone", "node", n.GetMetadata().GetName(), "cidr", s)
		return netip.Prefix{}, false
	}
	return p, true
}

func (c *Controller) sync(ctx context.Context, name string) error {
	n, ok := c.nodes.Get(name)
	if !ok {
		c.release(name)
		return nil
	}
	if n.GetSpec().GetPodCidr() != "" {
		return c.record(ctx, n)
	}
	p, err := c.reserve(name)
	if errors.Is(err, ErrFull) {
		c.failures.Inc()
		c.events.Eventf(n, controller.Warning, "CIDRNotAvailable", "Node %s: no pod CIDR left in the cluster CIDR; waiting for a node to be deleted", name)
		return nil // enqueued again when a CIDR is released
	}
	var taken string
	_, err = c.nodeAPI.Mutate(ctx, "", name, false, func(cur *v1.Node) error {
		if cur.Spec == nil {
			cur.Spec = &v1.NodeSpec{}
		}
		if cur.Spec.PodCidr != "" {
			taken = cur.Spec.PodCidr // someone set one first: keep theirs
			return nil
		}
		cur.Spec.PodCidr = p.String()
		cur.Spec.PodCidrs = []string{p.String()}
		return nil
	})
	switch {
	case apierrors.IsNotFound(err):
		c.release(name)
		return nil
	case err != nil:
		c.events.Eventf(n, controller.Warning, "CIDRAssignmentFailed", "Node %s: assigning pod CIDR %s: %v", name, p, err)
		return err // keep the reservation: the retry writes the same CIDR
	case taken != "":
		c.log.Info("node got a pod CIDR from elsewhere", "node", name, "cidr", taken)
		c.loop.Enqueue(name)
		return nil
	}
	c.log.Info("assigned pod CIDR", "node", name, "cidr", p)
	return nil
}

// reserve returns the CIDR reserved for a node, reserving one if needed.
func (c *Controller) reserve(name string) (netip.Prefix, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.byNode[name]; ok {
		return p, nil
	}
	p, err := c.set.AllocateNext()
	if err != nil {
		c.waiting[name] = true
		return p, err
	}
	delete(c.waiting, name)
	c.byNode[name] = p
	c.allocated.Set(float64(c.set.InUse()))
	return p, nil
}

// record takes note of the CIDR a node has, and fills podCIDRs if missing.
func (c *Controller) record(ctx context.Context, n *v1.Node) error {
	name := n.GetMetadata().GetName()
	p, ok := c.parse(n)
	if !ok {
		return nil
	}
	c.mu.Lock()
	if mine, had := c.byNode[name]; had && mine != p {
		_ = c.set.Release(mine) // reserved for it, but it got another
	}
	conflict := ""
	for other, q := range c.byNode {
		if q == p && other != name {
			conflict = other
		}
	}
	c.byNode[name] = p
	_ = c.set.Occupy(p)
	c.allocated.Set(float64(c.set.InUse()))
	c.mu.Unlock()
	if conflict != "" {
		c.log.Error("pod CIDR already belongs to another node", "node", name, "cidr", p, "other", conflict)
		c.events.Eventf(n, controller.Warning, "CIDRNotAvailable", "Node %s: pod CIDR %s is also node %s's", name, p, conflict)
	}
	if len(n.GetSpec().GetPodCidrs()) > 0 {
		return nil
	}
	_, err := c.nodeAPI.Mutate(ctx, "", name, false, func(cur *v1.Node) error {
		if cur.Spec.GetPodCidr() == p.String() && len(cur.Spec.PodCidrs) == 0 {
			cur.Spec.PodCidrs = []string{p.String()}
		}
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// release frees a deleted node's CIDR and wakes nodes waiting for one.
func (c *Controller) release(name string) {
	c.mu.Lock()
	p, ok := c.byNode[name]
	if !ok {
		delete(c.waiting, name)
		c.mu.Unlock()
		return
	}
	delete(c.byNode, name)
	shared := false
	for _, q := range c.byNode {
		shared = shared || q == p
	}
	if !shared {
		_ = c.set.Release(p)
	}
	c.allocated.Set(float64(c.set.InUse()))
	waiting := make([]string, 0, len(c.waiting))
	for w := range c.waiting {
		waiting = append(waiting, w)
	}
	c.mu.Unlock()
	c.log.Info("released pod CIDR of deleted node", "node", name, "cidr", p)
	for _, w := range waiting {
		c.loop.Enqueue(w)
	}
}
