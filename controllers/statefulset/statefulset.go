// Package statefulset is the StatefulSet controller (apps/v1): pods with
// stable names <set>-0..N-1, each with its own claims, DNS names through
// the governing headless Service, created and removed in order.
//
// Loop (on the controller skeleton): StatefulSet and pod events enqueue
// the set. Sync claims the set's pods (controlling ownerReferences) and,
// ordinal by ordinal: makes the missing claims <template>-<set>-<i> first
// (never deleted with the pod; with persistentVolumeClaimRetentionPolicy
// whenDeleted Delete they are owned by the set, whenScaled Delete they go
// once their ordinal is scaled away), then the missing pod (hostname
// <set>-<i>, subdomain serviceName: <set>-<i>.<service>.<ns>.svc; labels
// statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index).
// OrderedReady creates pod i only once 0..i-1 are Running and Ready and
// removes the highest ordinal first, one at a time, while the others are
// ready; Parallel does all at once. A failed pod is deleted and made
// again, with the same name and claims. RollingUpdate replaces, from the
// highest ordinal down to partition, one pod at a time whose revision
// (ControllerRevision, label controller-revision-hash) is not the update
// revision, while all are ready; OnDelete only uses the new template for
// pods that were deleted.
//
// Events: SuccessfulCreate ("create Pod web-0 in StatefulSet web
// successful", "create Claim www-web-0 Pod web-0 in StatefulSet web
// success"), SuccessfulDelete, FailedCreate, RecreatingFailedPod.
package statefulset

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

// Labels Kubernetes puts on a set's pods.
const (
	PodNameLabel  = "statefulset.kubernetes.io/pod-name"
	PodIndexLabel = "apps.kubernetes.io/pod-index"
)

// Config tunes the controller.
type Config struct {
	// Workers (--concurrent-statefulset-syncs, default 5).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-statefulset-syncs: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller is the StatefulSet controller.
type Controller struct {
	ssAPI   *client.Typed[*v1.StatefulSet]
	podAPI  *client.Typed[*v1.Pod]
	pvcAPI  *client.Typed[*v1.PersistentVolumeClaim]
	sets    controller.Source[*v1.StatefulSet]
	pods    controller.Source[*v1.Pod]
	pvcs    controller.Source[*v1.PersistentVolumeClaim]
	owners  controller.Owners[*v1.StatefulSet]
	history controller.History
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
		cfg.Workers = 5
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	revs := controller.For[*v1.ControllerRevision](d.Informers)
	c := &Controller{ssAPI: client.For[*v1.StatefulSet](d.Client), podAPI: client.For[*v1.Pod](d.Client), pvcAPI: client.For[*v1.PersistentVolumeClaim](d.Client),
		sets: controller.For[*v1.StatefulSet](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		pvcs:    controller.For[*v1.PersistentVolumeClaim](d.Informers),
		history: controller.History{API: client.For[*v1.ControllerRevision](d.Client), Source: revs, Kind: "StatefulSet"},
		events:  d.Recorder, log: log.With("controller", "statefulset"), now: time.Now}
	c.owners = controller.Owners[*v1.StatefulSet]{Source: c.sets, Kind: "StatefulSet",
		Selector: func(s *v1.StatefulSet) *v1.LabelSelector { return s.GetSpec().GetSelector() }}
	c.loop = controller.New(controller.Config{Name: "statefulset", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.sets.HasSynced, c.pods.HasSynced, c.pvcs.HasSynced, revs.HasSynced}})
	c.sets.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.StatefulSet])
	c.pods.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.Pod])
	c.pods.AddIndex(controller.IndexOrphanNamespace, controller.OrphanNamespaceIndex[*v1.Pod])
	revs.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.ControllerRevision])
	c.sets.AddHandler(informer.Handler[*v1.StatefulSet]{
		OnAdd:    func(s *v1.StatefulSet) { c.loop.EnqueueObject(s) },
		OnUpdate: func(_, s *v1.StatefulSet) { c.loop.EnqueueObject(s) },
	})
	podEvent := func(p *v1.Pod) {
		m := p.GetMetadata()
		if ref := controller.ControllerRef(m); ref != nil {
			if s := c.owners.Of(m.GetNamespace(), ref); s != nil {
				c.loop.EnqueueObject(s)
			}
			return
		}
		for _, s := range c.owners.Matching(m) {
			c.loop.EnqueueObject(s)
		}
	}
	c.pods.AddHandler(informer.Handler[*v1.Pod]{OnAdd: podEvent, OnUpdate: func(_, p *v1.Pod) { podEvent(p) }, OnDelete: podEvent})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }
