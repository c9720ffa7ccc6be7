// Package garbagecollector deletes objects whose owners are gone, and
// carries out foreground and orphan deletions, through ownerReferences.
//
// Loop (on the controller skeleton, over every kind but Event or the
// kinds configured, keyed
// "Kind|ns/name"): an object is enqueued when it appears with owners, when
// its owners change, when an owner of it is deleted, and when it is being
// deleted with the "orphan" or "foregroundDeletion" finalizer. Sync then:
//
//   - owner deleting with "orphan": removes its reference from every
//     dependent, then the finalizer (the apiserver then deletes the owner);
//   - owner deleting with "foregroundDeletion": enqueues its dependents
//     (which delete themselves, below) and removes the finalizer once none
//     is left;
//   - dependent: looks its owners up by kind, name and uid (the cache, then
//     the apiserver before believing one is gone). If some owner is still
//     there it only drops the references to the gone or foreground-deleting
//     ones; if all are gone it deletes itself in the background; if the
//     remaining ones are foreground-deleting it deletes itself in the
//     foreground when it has dependents of its own.
//
// A restarted controller-manager lists every kind, so an object whose owner
// vanished while nobody watched is found at the first list. Deletes are
// compare-and-swap on the version the decision was made on.
//
// Simplification: blockOwnerDeletion is treated as always true (a
// foreground-deleting owner waits for all its dependents).
package garbagecollector

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Finalizers the apiserver adds for Orphan and Foreground deletes.
const (
	FinalizerOrphan     = "orphan"
	FinalizerForeground = "foregroundDeletion"
)

// Config tunes the collector.
type Config struct {
	// Workers is how many objects are examined at once (--concurrent-gc-syncs, default 20).
	Workers int
	// Kinds are the kinds watched as owners and dependents; empty means
	// every kind but Event. The controller-manager passes the kinds its
	// credentials may list.
	Kinds []string
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-gc-syncs: must be >= 0, got %d", c.Workers)
	}
	for _, k := range c.Kinds {
		if _, err := kinds.Lookup(k); err != nil {
			return fmt.Errorf("garbage collector Kinds: %w", err)
		}
	}
	return nil
}

// DefaultKinds is every kind but Event (events are never owners, and the
// most numerous objects).
func DefaultKinds() []string {
	var out []string
	for _, k := range kinds.All() {
		if k.Name != "Event" {
			out = append(out, k.Name)
		}
	}
	return out
}

// Controller is the garbage collector.
type Controller struct {
	client  *client.Client
	kinds   map[string]*kinds.Kind
	sources map[string]controller.Source[v1.Object]
	loop    *controller.Controller
	log     *slog.Logger
	actions *prometheus.CounterVec
}

// New builds the collector on shared informers of its kinds.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = 20
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		client: d.Client, kinds: map[string]*kinds.Kind{}, sources: map[string]controller.Source[v1.Object]{},
		log: log.With("controller", "garbagecollector"),
		actions: controller.Register(d.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_gc_actions_total",
			Help: "Garbage collector actions: delete (a dependent whose owners are gone), release (a reference to a gone owner removed), orphan (a reference removed for an orphaning owner), finalize (a finalizer removed).",
		}, []string{"action"})),
	}
	var synced []func() bool
	names := cfg.Kinds
	if len(names) == 0 {
		names = DefaultKinds()
	}
	for _, name := range names {
		k, _ := kinds.Lookup(name)
		if _, dup := c.kinds[k.Name]; dup {
			continue
		}
		src := d.Informers.ForKind(k)
		src.AddIndex(controller.IndexOwnerUID, controller.OwnerUIDIndex[v1.Object])
		src.AddHandler(c.handler(k))
		c.kinds[k.Name] = k
		c.sources[k.Name] = src
		synced = append(synced, src.HasSynced)
	}
	c.loop = controller.New(controller.Config{
		Name: "garbagecollector", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log, Synced: synced,
	})
	return c, nil
}

// Run runs the collector until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func key(k *kinds.Kind, o v1.Object) string { return k.Name + "|" + v1.Key(o) }

func parseKey(key string) (kind, objKey string, err error) {
	kind, objKey, ok := strings.Cut(key, "|")
	if !ok {
		return "", "", fmt.Errorf("bad key %q", key)
	}
	return kind, objKey, nil
}

func (c *Controller) handler(k *kinds.Kind) informer.Handler[v1.Object] {
	return informer.Handler[v1.Object]{
		OnAdd: func(o v1.Object) {
			if interesting(o) {
				c.loop.Enqueue(key(k, o))
			}
		},
		OnUpdate: func(old, cur v1.Object) {
			om, cm := old.GetMetadata(), cur.GetMetadata()
			resync := om.GetResourceVersion() == cm.GetResourceVersion()
			if resync || !sameRefs(om.GetOwnerReferences(), cm.GetOwnerReferences()) || gcFinalizing(cur) {
				if interesting(cur) {
					c.loop.Enqueue(key(k, cur))
				}
			}
			if !resync && cm.GetDeletionTimestamp() != nil {
				c.enqueueWaitingOwners(cur)
			}
		},
		OnDelete: func(o v1.Object) {
			c.enqueueDependents(o.GetMetadata().GetUid())
			c.enqueueWaitingOwners(o)
		},
	}
}

// interesting objects have owners or a finalizer the collector handles.
func interesting(o v1.Object) bool {
	return len(o.GetMetadata().GetOwnerReferences()) > 0 || gcFinalizing(o)
}

// gcFinalizing reports whether o is being deleted and waits on the collector.
func gcFinalizing(o v1.Object) bool {
	m := o.GetMetadata()
	return m.GetDeletionTimestamp() != nil && (hasFinalizer(m, FinalizerOrphan) || hasFinalizer(m, FinalizerForeground))
}

func hasFinalizer(m *v1.ObjectMeta, f string) bool {
	for _, have := range m.GetFinalizers() {
		if have == f {
			return true
		}
	}
	return false
}

func sameRefs(a, b []*v1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Uid != b[i].Uid || a[i].Name != b[i].Name || a[i].Kind != b[i].Kind {
			return false
		}
	}
	return true
}

// dependents returns the cached objects of every kind that reference uid.
func (c *Controller) dependents(uid string) []dependent {
	var out []dependent
	for name, src := range c.sources {
		for _, o := range src.ByIndex(controller.IndexOwnerUID, uid) {
			out = append(out, dependent{kind: c.kinds[name], obj: o})
		}
	}
	return out
}

type dependent struct {
	kind *kinds.Kind
	obj  v1.Object
}

func (c *Controller) enqueueDependents(uid string) {
	for _, d := range c.dependents(uid) {
		c.loop.Enqueue(key(d.kind, d.obj))
	}
}

// enqueueWaitingOwners wakes the foreground-deleting owners of o, which
// wait for o to go.
func (c *Controller) enqueueWaitingOwners(o v1.Object) {
	m := o.GetMetadata()
	for _, ref := range m.GetOwnerReferences() {
		k, ok := c.kinds[ref.Kind]
		if !ok {
			continue
		}
		owner, ok := c.sources[k.Name].Get(objectKey(k, m.GetNamespace(), ref.Name))
		if ok && owner.GetMetadata().GetUid() == ref.Uid && gcFinalizing(owner) {
			c.loop.Enqueue(key(k, owner))
		}
	}
}

// objectKey is the cache key of an owner of kind k referenced from ns.
func objectKey(k *kinds.Kind, ns, name string) string {
	if k.Namespaced {
		return ns + "/" + name
	}
	return name
}

// retryLater is how long a foreground deletion waits before looking at its
// dependents again when no event wakes it.
const retryLater = 10 * time.Second
