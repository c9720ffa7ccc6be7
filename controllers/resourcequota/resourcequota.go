// Package resourcequota is the quota controller (v1 ResourceQuota): it
// keeps every quota's status — hard equal to spec.hard, used the sum of
// what the namespace's objects use of each capped resource (api/quota) —
// after what the apiserver's admission cannot see: pods that finish (a
// Succeeded or Failed pod uses nothing), objects gone without a Release
// (an apiserver that stopped mid-request), quotas whose spec changed, and
// drift. The admission charges creates and refunds deletes itself, so
// status.used is right as soon as a request returns; this controller is
// the recount, as Kubernetes' resource quota controller.
//
// Loop (on the controller skeleton): a quota's add, and an update whose
// spec.hard differs from status.hard, enqueue it; a pod turning terminal or
// deleted, and a deleted Service, ConfigMap, Secret or claim (or a claim
// resized, a Service changing type), enqueue the quotas of its namespace;
// every quota is synced again each SyncPeriod (--resource-quota-sync-period).
// Sync reads the quota fresh from the API, lists the namespace's objects of
// the kinds its names measure (through the API: count/<resource>.<group>
// may name any kind, and the list is consistent with the charges made in
// etcd), and writes status with compare-and-swap on the version read, so
// a charge made meanwhile makes the write conflict and the sync retry.
// Events are not recorded (Kubernetes records none either); the
// skeleton's metrics count syncs and errors.
//
// Settling: a create is charged before it is stored, so a list made
// between the two would miss it and a recount would undercount (and let
// the next create overshoot). A sync therefore counts only once the quota
// has stayed at one version for Settle (default 2s: no charge meanwhile,
// so every earlier charge's object has been stored); a charge in that time
// starts the wait again (a full quota refuses without writing, so a
// recount that frees room is never starved), and the status write is a
// compare-and-swap on that version.
package resourcequota

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/quota"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Config tunes the controller.
type Config struct {
	// Workers is how many quotas sync at once (--concurrent-resource-quota-syncs,
	// default 5).
	Workers int
	// SyncPeriod is how often every quota is recounted
	// (--resource-quota-sync-period, default 5m, as Kubernetes).
	SyncPeriod time.Duration
	// Settle is how long a quota must go without a charge before it is
	// recounted (default 2s; see the package comment).
	Settle time.Duration
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-resource-quota-syncs: must be >= 0, got %d", c.Workers)
	}
	if c.Settle < 0 {
		return fmt.Errorf("resourcequota: Settle must be >= 0, got %s", c.Settle)
	}
	if c.SyncPeriod < 0 {
		return fmt.Errorf("--resource-quota-sync-period: must be >= 0, got %s", c.SyncPeriod)
	}
	return nil
}

// Controller is the quota controller.
type Controller struct {
	cfg    Config
	c      *client.Client
	api    *client.Typed[*v1.ResourceQuota]
	quotas controller.Source[*v1.ResourceQuota]
	loop   *controller.Controller
	log    *slog.Logger

	mu sync.Mutex
	// seen is, by quota key, the version a sync found and when: the
	// recount waits until it has held for Settle.
	seen map[string]seenVersion
}

type seenVersion struct {
	rv int64
	at time.Time
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = 5 * time.Minute
	}
	if cfg.Settle == 0 {
		cfg.Settle = 2 * time.Second
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{cfg: cfg, c: d.Client, api: client.For[*v1.ResourceQuota](d.Client),
		quotas: controller.For[*v1.ResourceQuota](d.Informers), log: log.With("controller", "resourcequota"), seen: map[string]seenVersion{}}
	c.quotas.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.ResourceQuota])
	pods := controller.For[*v1.Pod](d.Informers)
	synced := []func() bool{c.quotas.HasSynced, pods.HasSynced}
	others := map[*kinds.Kind]controller.Source[v1.Object]{}
	for _, name := range []string{"Service", "ConfigMap", "Secret", "PersistentVolumeClaim"} {
		k, _ := kinds.Lookup(name)
		others[k] = d.Informers.ForKind(k)
		synced = append(synced, others[k].HasSynced)
	}
	c.loop = controller.New(controller.Config{Name: "resourcequota", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log, Synced: synced})
	c.quotas.AddHandler(informer.Handler[*v1.ResourceQuota]{
		OnAdd: func(q *v1.ResourceQuota) { c.loop.EnqueueObject(q) },
		OnUpdate: func(_, q *v1.ResourceQuota) {
			if !maps.Equal(q.GetSpec().GetHard(), q.GetStatus().GetHard()) {
				c.loop.EnqueueObject(q)
			}
		},
	})
	nsOf := func(o v1.Object) { c.enqueueNamespace(o.GetMetadata().GetNamespace()) }
	pods.AddHandler(informer.Handler[*v1.Pod]{
		OnUpdate: func(old, p *v1.Pod) {
			if !quota.Terminal(old) && quota.Terminal(p) {
				nsOf(p)
			}
		},
		OnDelete: func(p *v1.Pod) { nsOf(p) },
	})
	for k, src := range others {
		src.AddHandler(informer.Handler[v1.Object]{
			OnUpdate: func(old, o v1.Object) {
				if !quota.IsZero(quota.SubtractFloor(quota.Usage(k.GroupResource(), old), quota.Usage(k.GroupResource(), o))) {
					nsOf(o) // uses less: a Service no longer a NodePort, ...
				}
			},
			OnDelete: nsOf,
		})
	}
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) enqueueNamespace(ns string) {
	for _, q := range c.quotas.ByIndex(controller.IndexNamespace, ns) {
		c.loop.EnqueueObject(q)
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, _ := strings.Cut(key, "/")
	q, err := c.api.Get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		c.mu.Lock()
		delete(c.seen, key)
		c.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	now := time.Now()
	c.mu.Lock()
	v, ok := c.seen[key]
	if !ok || v.rv != q.GetMetadata().GetResourceVersion() {
		v = seenVersion{rv: q.GetMetadata().GetResourceVersion(), at: now}
		c.seen[key] = v
	}
	c.mu.Unlock()
	if wait := c.cfg.Settle - now.Sub(v.at); wait > 0 {
		c.loop.EnqueueAfter(key, wait)
		return nil
	}
	c.mu.Lock()
	delete(c.seen, key)
	c.mu.Unlock()
	used, err := c.count(ctx, ns, q.GetSpec().GetHard())
	if err != nil {
		return err
	}
	status := &v1.ResourceQuotaStatus{Hard: maps.Clone(q.GetSpec().GetHard()), Used: used.Strings()}
	if status.Hard == nil {
		status.Hard = map[string]string{}
	}
	if !proto.Equal(status, q.GetStatus()) {
		upd := proto.Clone(q).(*v1.ResourceQuota)
		upd.Status = status
		if _, err := c.api.UpdateStatus(ctx, upd); err != nil {
			return err // a conflict: a charge came in meanwhile; retry
		}
		c.log.Debug("recounted", "quota", key, "used", quota.PrettyPrint(used))
	}
	c.loop.EnqueueAfter(key, c.cfg.SyncPeriod)
	return nil
}

// count sums what the namespace's objects use of each name of hard.
func (c *Controller) count(ctx context.Context, ns string, hard map[string]string) (quota.List, error) {
	byKind := map[*kinds.Kind][]string{}
	names := make([]string, 0, len(hard))
	for n := range hard {
		names = append(names, n)
	}
	sort.Strings(names)
	total := quota.List{}
	for _, n := range names {
		total[n] = quota.List{}[n]
		if k := kinds.QuotaKind(n); k != nil {
			byKind[k] = append(byKind[k], n)
		}
	}
	for k, ks := range byKind {
		objs, _, err := client.ForKind(c.c, k).List(ctx, client.ListOptions{Namespace: ns})
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			total = quota.Add(total, quota.Mask(quota.Usage(k.GroupResource(), o), ks))
		}
	}
	return total, nil
}
