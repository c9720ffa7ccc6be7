// Package nodelifecycle is the node lifecycle controller: it notices nodes
// whose kubelet stopped renewing its Lease, marks them and their pods, and
// evicts the pods so their controllers recreate them elsewhere.
//
// Loop (on the controller skeleton, keyed by node name): Lease changes in
// kube-node-lease, Node changes, pods bound to troubled nodes and a
// periodic monitor tick enqueue nodes. Sync:
//
//  1. health: a node is unreachable when no renewal of its lease was
//     observed for GracePeriod. Renewals are timed by this controller's
//     clock when it sees them change, never by the kubelet's (so clock skew
//     does not matter); a node already marked unreachable when the
//     controller starts stays so until a renewal is seen.
//  2. unreachable: Ready (and every other condition) becomes Unknown with
//     reason NodeStatusUnknown, message "Kubelet stopped posting node
//     status.", the taint node.kubernetes.io/unreachable:NoExecute is added,
//     and the node's pods get Ready=False at once (so Services drop them).
//     A node whose kubelet reports Ready=False gets
//     node.kubernetes.io/not-ready:NoExecute instead. A node whose lease is
//     renewed again loses these taints; its kubelet re-posts Ready.
//  3. eviction: pods on a node with NoExecute taints are deleted when their
//     toleration runs out: the pod's own toleration of the taint (its
//     tolerationSeconds, or forever), else PodEvictionTimeout for the
//     unreachable and not-ready taints, else at once; counted from the
//     taint's timeAdded, so a restart does not restart the clock.
//     Deletes use grace period 0: the kubelet that would finish a graceful
//     delete is unreachable, so a graceful delete would leave the pod
//     Terminating for as long as the node is gone. If the node is only
//     partitioned, its kubelet stops the containers when it reconnects and
//     finds the pod gone; until then the old and the new copy may both run,
//     which ReplicaSets permit.
//  4. rate limiting: evictions across the cluster share a token bucket
//     (EvictionRate pods/s). If at least UnhealthyThreshold of the nodes
//     (and more than two) are unreachable or not ready, the rate drops to
//     SecondaryEvictionRate, or to zero in clusters of at most
//     LargeClusterThreshold nodes; if every node is, evictions stop: the
//     likelier fault is this controller's own connectivity, and deleting
//     every pod would only make it worse.
package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Taint keys and the lease namespace (conventions shared with the kubelet
// and the scheduler).
const (
	TaintUnreachable = "node.kubernetes.io/unreachable"
	TaintNotReady    = "node.kubernetes.io/not-ready"
	LeaseNamespace   = "kube-node-lease"
)

// Config tunes the controller.
type Config struct {
	// GracePeriod is how long a lease may go unrenewed before the node is
	// unreachable (--node-monitor-grace-period, default 15s).
	GracePeriod time.Duration
	// MonitorPeriod is how often every node is checked even without events
	// (--node-monitor-period, default 5s).
	MonitorPeriod time.Duration
	// PodEvictionTimeout is the toleration of the unreachable and not-ready
	// taints for pods that declare none (--pod-eviction-timeout, default 5s).
	PodEvictionTimeout time.Duration
	// EvictionRate is the cluster-wide eviction rate in pods per second
	// (--node-eviction-rate, default 10; also the burst).
	EvictionRate float64
	// SecondaryEvictionRate applies when much of a large cluster is unhealthy
	// (--secondary-node-eviction-rate, default 1).
	SecondaryEvictionRate float64
	// UnhealthyThreshold is the fraction of unhealthy nodes from which the
	// cluster counts as partially disrupted (--unhealthy-zone-threshold, default 0.55).
	UnhealthyThreshold float64
	// LargeClusterThreshold: in clusters of at most this many nodes, partial
	// disruption stops evictions (--large-cluster-size-threshold, default 50).
	LargeClusterThreshold int
	// Workers is how many nodes sync at once (default 4).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.GracePeriod < 0:
		return fmt.Errorf("--node-monitor-grace-period: must be > 0, got %s", c.GracePeriod)
	case c.MonitorPeriod < 0:
		return fmt.Errorf("--node-monitor-period: must be > 0, got %s", c.MonitorPeriod)
	case c.PodEvictionTimeout < 0:
		return fmt.Errorf("--pod-eviction-timeout: must be >= 0, got %s", c.PodEvictionTimeout)
	case c.EvictionRate < 0:
		return fmt.Errorf("--node-eviction-rate: must be > 0, got %g", c.EvictionRate)
	case c.SecondaryEvictionRate < 0:
		return fmt.Errorf("--secondary-node-eviction-rate: must be >= 0, got %g", c.SecondaryEvictionRate)
	case c.UnhealthyThreshold < 0 || c.UnhealthyThreshold > 1:
		return fmt.Errorf("--unhealthy-zone-threshold: must be within [0, 1], got %g", c.UnhealthyThreshold)
	case c.LargeClusterThreshold < 0:
		return fmt.Errorf("--large-cluster-size-threshold: must be >= 0, got %d", c.LargeClusterThreshold)
	case c.Workers < 0:
		return fmt.Errorf("node lifecycle Workers: must be >= 0, got %d", c.Workers)
	}
	return nil
}

func (c *Config) defaults() {
	if c.GracePeriod == 0 {
		c.GracePeriod = 15 * time.Second
	}
	if c.MonitorPeriod == 0 {
		c.MonitorPeriod = 5 * time.Second
	}
	if c.PodEvictionTimeout == 0 {
		c.PodEvictionTimeout = 5 * time.Second
	}
	if c.EvictionRate == 0 {
		c.EvictionRate = 10
	}
	if c.SecondaryEvictionRate == 0 {
		c.SecondaryEvictionRate = 1
	}
	if c.UnhealthyThreshold == 0 {
		c.UnhealthyThreshold = 0.55
	}
	if c.LargeClusterThreshold == 0 {
		c.LargeClusterThreshold = 50
	}
	if c.Workers == 0 {
		c.Workers = 4
	}
}

// Controller is the node lifecycle controller.
type Controller struct {
	cfg     Config
	nodeAPI *client.Typed[*v1.Node]
	podAPI  *client.Typed[*v1.Pod]
	nodes   controller.Source[*v1.Node]
	leases  controller.Source[*v1.Lease]
	pods    controller.Source[*v1.Pod]
	events  controller.Recorder
	loop    *controller.Controller
	log     *slog.Logger
	now     func() time.Time
	limiter *tokenBucket
	metrics *metrics

	mu     sync.Mutex
	health map[string]*nodeHealth
	seen   map[string]time.Time // node, taint key and value -> first seen (taints without timeAdded)
}

type metrics struct {
	evictions  prometheus.Counter
	unhealthy  prometheus.Gauge
	disruption prometheus.Gauge
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		cfg: cfg, nodeAPI: client.For[*v1.Node](d.Client), podAPI: client.For[*v1.Pod](d.Client),
		nodes: controller.For[*v1.Node](d.Informers), leases: controller.For[*v1.Lease](d.Informers),
		pods: controller.For[*v1.Pod](d.Informers), events: d.Recorder,
		log: log.With("controller", "nodelifecycle"), now: time.Now,
		limiter: newTokenBucket(cfg.EvictionRate, max(int(cfg.EvictionRate), 1), time.Now()),
		health:  map[string]*nodeHealth{}, seen: map[string]time.Time{},
		metrics: &metrics{
			evictions: controller.Register(d.Registry, prometheus.NewCounter(prometheus.CounterOpts{
				Name: "tugboat_controller_manager_node_evictions_total", Help: "Pods deleted from unreachable or NoExecute-tainted nodes."})),
			unhealthy: controller.Register(d.Registry, prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "tugboat_controller_manager_unhealthy_nodes", Help: "Nodes unreachable or not ready."})),
			disruption: controller.Register(d.Registry, prometheus.NewGauge(prometheus.GaugeOpts{
				Name: "tugboat_controller_manager_node_disruption_state", Help: "0 normal, 1 partial disruption (evictions slowed or stopped), 2 full disruption (evictions stopped)."})),
		},
	}
	c.loop = controller.New(controller.Config{
		Name: "nodelifecycle", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.nodes.HasSynced, c.leases.HasSynced, c.pods.HasSynced},
	})
	c.pods.AddIndex(controller.IndexNodeName, controller.NodeNameIndex)
	byName := func(n *v1.Node) { c.loop.Enqueue(n.GetMetadata().GetName()) }
	c.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: byName, OnUpdate: func(_, n *v1.Node) { byName(n) }, OnDelete: byName})
	lease := func(l *v1.Lease) {
		if l.GetMetadata().GetNamespace() == LeaseNamespace {
			c.loop.Enqueue(l.GetMetadata().GetName())
		}
	}
	c.leases.AddHandler(informer.Handler[*v1.Lease]{OnAdd: lease, OnUpdate: func(old, cur *v1.Lease) {
		if old.GetMetadata().GetResourceVersion() != cur.GetMetadata().GetResourceVersion() {
			lease(cur)
		}
	}})
	c.pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: c.podChanged, OnUpdate: func(_, p *v1.Pod) { c.podChanged(p) }})
	return c, nil
}

// podChanged wakes the node of a pod that lands on a troubled node.
func (c *Controller) podChanged(p *v1.Pod) {
	name := p.GetSpec().GetNodeName()
	if name == "" {
		return
	}
	n, ok := c.nodes.Get(name)
	if !ok {
		return
	}
	for _, t := range n.GetSpec().GetTaints() {
		if t.Effect == "NoExecute" {
			c.loop.Enqueue(name)
			return
		}
	}
}

// Run runs the controller, and the periodic monitor, until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	go func() {
		t := time.NewTicker(c.cfg.MonitorPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, n := range c.nodes.List() {
					c.loop.Enqueue(n.GetMetadata().GetName())
				}
			}
		}
	}()
	return c.loop.Run(ctx)
}
