// Package daemonset is the DaemonSet controller (apps/v1): one pod of each
// DaemonSet on every node that should run it.
//
// Loop (on the controller skeleton): DaemonSet, pod and node events
// enqueue DaemonSets. Sync works out, per node, whether the DaemonSet
// should run there (its template's nodeSelector and required node
// affinity match, and the node's NoSchedule/NoExecute taints are
// tolerated, counting the tolerations every daemon pod gets:
// not-ready and unreachable NoExecute, disk/memory/pid-pressure and
// unschedulable NoSchedule) and whether an existing pod may stay (only
// NoExecute taints evict). It creates the missing pods, each pinned to its
// node by a required node affinity on metadata.name, which the default
// scheduler honours (the controller never binds); deletes pods on nodes
// that should not run them, on nodes that are gone, failed ones (replaced
// on the next sync) and duplicates. A node that joins gets its pod within
// one sync.
//
// Updates: every template is a ControllerRevision <ds>-<hash> (label
// controller-revision-hash on its pods; a template seen before reuses its
// revision with the next number, so `rollout undo` is a template change).
// RollingUpdate replaces pods node by node: with maxSurge 0, old pods go
// while fewer than maxUnavailable nodes lack an available pod and the new
// pod is created in their place; with maxSurge, a new pod starts beside
// the old one, which goes once the new one is available. OnDelete only
// uses the new template for pods that were deleted. Old revisions beyond
// revisionHistoryLimit that no pod uses are deleted.
//
// Contract: creates and deletes are expectations (as the ReplicaSet
// controller's), so a lagging watch never doubles a node's pod. Events:
// SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete,
// FailedDaemonPod (a failed pod being replaced).
package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// HashLabel names the revision of a daemon pod's template.
const HashLabel = controller.HashLabel

// Config tunes the controller.
type Config struct {
	// Workers is how many DaemonSets sync at once (--concurrent-daemonset-syncs, default 2).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-daemonset-syncs: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller is the DaemonSet controller.
type Controller struct {
	dsAPI   *client.Typed[*v1.DaemonSet]
	podAPI  *client.Typed[*v1.Pod]
	revAPI  *client.Typed[*v1.ControllerRevision]
	dss     controller.Source[*v1.DaemonSet]
	pods    controller.Source[*v1.Pod]
	nodes   controller.Source[*v1.Node]
	revs    controller.Source[*v1.ControllerRevision]
	owners  controller.Owners[*v1.DaemonSet]
	history controller.History
	exp     *controller.Expectations
	events  controller.Recorder
	loop    *controller.Controller
	log     *slog.Logger
	now     func() time.Time
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		dsAPI: client.For[*v1.DaemonSet](d.Client), podAPI: client.For[*v1.Pod](d.Client), revAPI: client.For[*v1.ControllerRevision](d.Client),
		dss: controller.For[*v1.DaemonSet](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		nodes: controller.For[*v1.Node](d.Informers), revs: controller.For[*v1.ControllerRevision](d.Informers),
		exp: controller.NewExpectations(0), events: d.Recorder, log: log.With("controller", "daemonset"), now: time.Now,
	}
	c.history = controller.History{API: c.revAPI, Source: c.revs, Kind: "DaemonSet"}
	c.owners = controller.Owners[*v1.DaemonSet]{Source: c.dss, Kind: "DaemonSet",
		Selector: func(ds *v1.DaemonSet) *v1.LabelSelector { return ds.GetSpec().GetSelector() }}
	c.loop = controller.New(controller.Config{Name: "daemonset", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.dss.HasSynced, c.pods.HasSynced, c.nodes.HasSynced, c.revs.HasSynced}})
	c.dss.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.DaemonSet])
	c.pods.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.Pod])
	c.pods.AddIndex(controller.IndexOrphanNamespace, controller.OrphanNamespaceIndex[*v1.Pod])
	c.revs.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.ControllerRevision])
	c.dss.AddHandler(informer.Handler[*v1.DaemonSet]{
		OnAdd:    func(ds *v1.DaemonSet) { c.loop.EnqueueObject(ds) },
		OnUpdate: func(_, ds *v1.DaemonSet) { c.loop.EnqueueObject(ds) },
		OnDelete: func(ds *v1.DaemonSet) { c.exp.Delete(v1.Key(ds)) },
	})
	all := func(*v1.Node) {
		for _, ds := range c.dss.List() {
			c.loop.EnqueueObject(ds)
		}
	}
	c.nodes.AddHandler(informer.Handler[*v1.Node]{OnAdd: all, OnUpdate: func(old, n *v1.Node) {
		if nodeChanged(old, n) {
			all(n)
		}
	}, OnDelete: all})
	c.pods.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd:    func(p *v1.Pod) { c.podEvent(p, true, false) },
		OnUpdate: func(old, p *v1.Pod) { c.podEvent(p, false, p.GetMetadata().GetDeletionTimestamp() != nil) },
		OnDelete: func(p *v1.Pod) { c.podEvent(p, false, true) },
	})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) podEvent(p *v1.Pod, added, deleted bool) {
	m := p.GetMetadata()
	ref := controller.ControllerRef(m)
	if ref == nil {
		for _, ds := range c.owners.Matching(m) {
			c.loop.EnqueueObject(ds)
		}
		return
	}
	ds := c.owners.Of(m.GetNamespace(), ref)
	if ds == nil {
		return
	}
	key := v1.Key(ds)
	switch {
	case added && m.GetDeletionTimestamp() == nil:
		c.exp.CreationObserved(key)
	case deleted:
		c.exp.DeletionObserved(key, m.GetUid())
	}
	c.loop.Enqueue(key)
	if mrs := ds.GetSpec().GetMinReadySeconds(); mrs > 0 && controller.IsPodReady(p) {
		c.loop.EnqueueAfter(key, time.Duration(mrs)*time.Second+100*time.Millisecond)
	}
}

// nodeChanged reports a change that can alter where daemons run (a
// heartbeat does not).
func nodeChanged(old, n *v1.Node) bool {
	if !sameMap(old.GetMetadata().GetLabels(), n.GetMetadata().GetLabels()) || len(old.GetSpec().GetTaints()) != len(n.GetSpec().GetTaints()) {
		return true
	}
	for i, t := range old.GetSpec().GetTaints() {
		u := n.GetSpec().GetTaints()[i]
		if t.Key != u.Key || t.Value != u.Value || t.Effect != u.Effect {
			return true
		}
	}
	return false
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
