// Package replicaset is the ReplicaSet controller: it keeps exactly
// spec.replicas active pods matching each ReplicaSet's selector.
//
// Loop (on the controller skeleton): ReplicaSet and Pod events enqueue the
// ReplicaSet's key; Sync claims the matching pods (adopting orphans,
// releasing pods whose labels stopped matching, all through controlling
// ownerReferences), creates missing pods in slow-start batches (1, 2, 4, ...
// stopping at the first failure) or deletes surplus ones in order of
// preference (unscheduled, then pending, not ready, recently ready, often
// restarted, newest), and writes status with observedGeneration.
//
// Contract: creates and deletes are recorded as expectations before they are
// issued; until the informer has shown every one of them (or they expire),
// Sync only writes status. A watch that lags therefore never makes the
// controller create or delete twice. Events: SuccessfulCreate,
// SuccessfulDelete, FailedCreate, FailedDelete.
package replicaset

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

// Config tunes the controller.
type Config struct {
	// Workers is how many ReplicaSets sync at once (--concurrent-replicaset-syncs, default 5).
	Workers int
	// BurstReplicas caps the creates or deletes of one sync (default 500).
	BurstReplicas int
	// ExpectationsTTL is how long unobserved creates/deletes block a
	// ReplicaSet before they are assumed lost (default 5m).
	ExpectationsTTL time.Duration
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-replicaset-syncs: must be >= 0, got %d", c.Workers)
	}
	if c.BurstReplicas < 0 {
		return fmt.Errorf("replicaset BurstReplicas: must be >= 0, got %d", c.BurstReplicas)
	}
	if c.ExpectationsTTL < 0 {
		return fmt.Errorf("replicaset ExpectationsTTL: must be >= 0, got %s", c.ExpectationsTTL)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Workers == 0 {
		c.Workers = 5
	}
	if c.BurstReplicas == 0 {
		c.BurstReplicas = 500
	}
}

// Controller is the ReplicaSet controller.
type Controller struct {
	cfg    Config
	rsAPI  *client.Typed[*v1.ReplicaSet]
	podAPI *client.Typed[*v1.Pod]
	nsAPI  *client.Typed[*v1.Namespace]
	rss    controller.Source[*v1.ReplicaSet]
	owners controller.Owners[*v1.ReplicaSet]
	pods   controller.Source[*v1.Pod]
	exp    *controller.Expectations
	events controller.Recorder
	loop   *controller.Controller
	log    *slog.Logger
	now    func() time.Time
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	return NewWithSources(d, cfg, controller.For[*v1.ReplicaSet](d.Informers), controller.For[*v1.Pod](d.Informers))
}

// NewWithSources builds the controller on the given sources (tests wrap
// them, for instance to delay the watch).
func NewWithSources(d controller.Deps, cfg Config, rss controller.Source[*v1.ReplicaSet], pods controller.Source[*v1.Pod]) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		cfg: cfg, rsAPI: client.For[*v1.ReplicaSet](d.Client), podAPI: client.For[*v1.Pod](d.Client), nsAPI: client.For[*v1.Namespace](d.Client),
		rss: rss, pods: pods, exp: controller.NewExpectations(cfg.ExpectationsTTL), events: d.Recorder,
		log: log.With("controller", "replicaset"), now: time.Now,
	}
	c.owners = controller.Owners[*v1.ReplicaSet]{Source: rss, Kind: "ReplicaSet",
		Selector: func(rs *v1.ReplicaSet) *v1.LabelSelector { return rs.GetSpec().GetSelector() }}
	c.loop = controller.New(controller.Config{
		Name: "replicaset", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{rss.HasSynced, pods.HasSynced},
	})
	rss.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.ReplicaSet])
	pods.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.Pod])
	pods.AddIndex(controller.IndexOrphanNamespace, controller.OrphanNamespaceIndex[*v1.Pod])
	rss.AddHandler(informer.Handler[*v1.ReplicaSet]{
		OnAdd:    func(rs *v1.ReplicaSet) { c.loop.EnqueueObject(rs) },
		OnUpdate: func(_, cur *v1.ReplicaSet) { c.loop.EnqueueObject(cur) },
		OnDelete: func(rs *v1.ReplicaSet) {
			c.exp.Delete(v1.Key(rs))
			c.loop.EnqueueObject(rs)
		},
	})
	pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: c.addPod, OnUpdate: c.updatePod, OnDelete: c.deletePod})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) addPod(p *v1.Pod) {
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		// Seen for the first time already deleting (after a re-list).
		c.deletePod(p)
		return
	}
	m := p.GetMetadata()
	if ref := controller.ControllerRef(m); ref != nil {
		if rs := c.owners.Of(m.Namespace, ref); rs != nil {
			key := v1.Key(rs)
			c.exp.CreationObserved(key)
			c.loop.Enqueue(key)
		}
		return
	}
	for _, rs := range c.owners.Matching(p.GetMetadata()) {
		c.loop.EnqueueObject(rs)
	}
}

func (c *Controller) updatePod(old, cur *v1.Pod) {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	if om.GetResourceVersion() == cm.GetResourceVersion() {
		return // a resync: nothing changed
	}
	labelsChanged := !sameLabels(om.GetLabels(), cm.GetLabels())
	if cm.GetDeletionTimestamp() != nil {
		// A graceful delete: the pod stops counting now, so observe the
		// deletion now rather than when the kubelet removes it.
		c.deletePod(cur)
		if labelsChanged {
			c.deletePod(old)
		}
		return
	}
	oldRef, curRef := controller.ControllerRef(om), controller.ControllerRef(cm)
	if oldRef != nil && (curRef == nil || oldRef.Uid != curRef.Uid) {
		if rs := c.owners.Of(om.Namespace, oldRef); rs != nil {
			c.loop.EnqueueObject(rs)
		}
	}
	if curRef != nil {
		rs := c.owners.Of(cm.Namespace, curRef)
		if rs == nil {
			return
		}
		c.loop.EnqueueObject(rs)
		// A pod that just became ready becomes available minReadySeconds later.
		if mrs := rs.GetSpec().GetMinReadySeconds(); mrs > 0 && !controller.IsPodReady(old) && controller.IsPodReady(cur) {
			c.loop.EnqueueAfter(v1.Key(rs), time.Duration(mrs)*time.Second+time.Second)
		}
		return
	}
	if labelsChanged || oldRef != nil {
		for _, rs := range c.owners.Matching(cur.GetMetadata()) {
			c.loop.EnqueueObject(rs)
		}
	}
}

func (c *Controller) deletePod(p *v1.Pod) {
	m := p.GetMetadata()
	ref := controller.ControllerRef(m)
	if ref == nil {
		return
	}
	rs := c.owners.Of(m.Namespace, ref)
	if rs == nil {
		return
	}
	key := v1.Key(rs)
	c.exp.DeletionObserved(key, m.GetUid())
	c.loop.Enqueue(key)
}

func sameLabels(a, b map[string]string) bool {
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
