// Package disruption is the disruption controller (policy/v1): it keeps
// every PodDisruptionBudget's status — how many of its pods are healthy,
// how many must be, and so how many evictions are allowed now — which the
// apiserver's eviction check reads and takes from (apiserver/disruption.go).
//
// Loop (on the controller skeleton): budget events, and pod events of the
// pods a budget selects, enqueue the budget; changes of the scalable kinds
// (kinds.Kind.Scale: ReplicaSets, Deployments, StatefulSets) enqueue the
// budgets of their namespace. Sync counts the selected pods: healthy =
// Ready, not being deleted and not recently evicted (status.disruptedPods,
// entries dropped when the pod is gone or after DeletionTimeout). Expected
// pods are the selected pods for an integer minAvailable, else the sum of
// the replicas of the pods' controllers (found through ownerReferences and
// the kind's scale; a ReplicaSet owned by a Deployment counts as the
// Deployment). desiredHealthy is minAvailable (a percentage rounded up) or
// expected - maxUnavailable (rounded up); disruptionsAllowed is
// currentHealthy - desiredHealthy, never below 0.
//
// Conditions: DisruptionAllowed True (SufficientPods), False
// (InsufficientPods), or False (SyncFailed) with disruptionsAllowed 0
// when the expected pods cannot be worked out. Events: NoPods,
// CalculateExpectedPodCountFailed.
package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Config tunes the controller.
type Config struct {
	// Workers is how many budgets sync at once (default 2).
	Workers int
	// DeletionTimeout is how long an evicted pod that is still there counts
	// as disrupted (default 2m, as Kubernetes).
	DeletionTimeout time.Duration
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 || c.DeletionTimeout < 0 {
		return fmt.Errorf("disruption: Workers and DeletionTimeout must be >= 0")
	}
	return nil
}

// Controller is the disruption controller.
type Controller struct {
	cfg    Config
	pdbAPI *client.Typed[*v1.PodDisruptionBudget]
	pdbs   controller.Source[*v1.PodDisruptionBudget]
	pods   controller.Source[*v1.Pod]
	scales map[string]controller.Source[v1.Object] // by Kind name
	events controller.Recorder
	loop   *controller.Controller
	log    *slog.Logger
	now    func() time.Time
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	if cfg.DeletionTimeout == 0 {
		cfg.DeletionTimeout = 2 * time.Minute
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{cfg: cfg, pdbAPI: client.For[*v1.PodDisruptionBudget](d.Client),
		pdbs: controller.For[*v1.PodDisruptionBudget](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		scales: map[string]controller.Source[v1.Object]{}, events: d.Recorder, log: log.With("controller", "disruption"), now: time.Now}
	synced := []func() bool{c.pdbs.HasSynced, c.pods.HasSynced}
	c.pdbs.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.PodDisruptionBudget])
	c.pods.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Pod])
	for _, k := range kinds.All() {
		if k.Scale == nil {
			continue
		}
		src := d.Informers.ForKind(k)
		c.scales[k.Name] = src
		synced = append(synced, src.HasSynced)
		nsChanged := func(o v1.Object) { c.enqueueNamespace(o.GetMetadata().GetNamespace()) }
		src.AddHandler(informer.Handler[v1.Object]{OnAdd: nsChanged, OnUpdate: func(_, o v1.Object) { nsChanged(o) }, OnDelete: nsChanged})
	}
	c.loop = controller.New(controller.Config{Name: "disruption", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log, Synced: synced})
	c.pdbs.AddHandler(informer.Handler[*v1.PodDisruptionBudget]{
		OnAdd:    func(p *v1.PodDisruptionBudget) { c.loop.EnqueueObject(p) },
		OnUpdate: func(_, p *v1.PodDisruptionBudget) { c.loop.EnqueueObject(p) },
	})
	c.pods.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd:    c.podChanged,
		OnUpdate: func(old, p *v1.Pod) { c.podChanged(old); c.podChanged(p) },
		OnDelete: c.podChanged,
	})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) podChanged(p *v1.Pod) {
	for _, pdb := range c.pdbs.ByIndex(controller.IndexNamespace, p.GetMetadata().GetNamespace()) {
		if sel, ok := selector(pdb); ok && sel.Matches(p.GetMetadata().GetLabels()) {
			c.loop.EnqueueObject(pdb)
		}
	}
}

func (c *Controller) enqueueNamespace(ns string) {
	for _, pdb := range c.pdbs.ByIndex(controller.IndexNamespace, ns) {
		c.loop.EnqueueObject(pdb)
	}
}

// selector is the budget's pod selector (policy/v1: empty selects all,
// unset none); ok is false when it selects nothing.
func selector(pdb *v1.PodDisruptionBudget) (labels.Selector, bool) {
	ls := pdb.GetSpec().GetSelector()
	if ls == nil {
		return nil, false
	}
	s, err := labels.FromLabelSelector(ls)
	return s, err == nil
}
