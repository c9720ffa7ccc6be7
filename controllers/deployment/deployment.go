// Package deployment is the Deployment controller: it rolls a Deployment's
// pod template out through one ReplicaSet per template revision.
//
// Loop (on the controller skeleton): Deployment, ReplicaSet and Pod events
// enqueue the Deployment's key. Sync claims the ReplicaSets matching the
// selector (adopting and releasing through controlling ownerReferences),
// finds the ReplicaSet whose template equals the Deployment's (ignoring the
// pod-template-hash label) or creates it as <name>-<hash>, and then:
//
//   - being deleted: only writes status;
//   - paused, or replicas changed mid-rollout: scales the ReplicaSets
//     proportionally, creates nothing;
//   - RollingUpdate: scales the new ReplicaSet up while the pods of all
//     ReplicaSets stay within replicas+maxSurge, and old ones down while
//     available pods stay at or above replicas-maxUnavailable;
//   - Recreate: scales old ReplicaSets to 0, waits until their pods are
//     gone, then scales the new one up;
//
// and writes status with the Available and Progressing conditions
// (ProgressDeadlineExceeded once no progress was made for
// progressDeadlineSeconds). Old ReplicaSets beyond revisionHistoryLimit are
// deleted once the rollout completes.
//
// Conventions shared with tugctl (rollout status|history|undo|restart):
// the revision is annotation deployment.kubernetes.io/revision on each
// ReplicaSet and on the Deployment; undo is a client-side copy of an old
// ReplicaSet's template into the Deployment, which makes that ReplicaSet
// the new one again with the next revision number (its earlier numbers are
// kept in deployment.kubernetes.io/revision-history).
//
// Contract: every write of a ReplicaSet or Deployment is compare-and-swap on
// the cached resource_version, so a decision made on a stale cache fails
// with a conflict and is retried instead of being applied.
package deployment

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

// Annotations and labels shared with tugctl.
const (
	RevisionAnnotation        = "deployment.kubernetes.io/revision"
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	MaxReplicasAnnotation     = "deployment.kubernetes.io/max-replicas"
	PodTemplateHashLabel      = "pod-template-hash"
	RestartedAtAnnotation     = "kubectl.kubernetes.io/restartedAt"
)

// Config tunes the controller.
type Config struct {
	// Workers is how many Deployments sync at once (--concurrent-deployment-syncs, default 5).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-deployment-syncs: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller is the Deployment controller.
type Controller struct {
	dAPI   *client.Typed[*v1.Deployment]
	rsAPI  *client.Typed[*v1.ReplicaSet]
	deps   controller.Source[*v1.Deployment]
	owners controller.Owners[*v1.Deployment]
	rss    controller.Source[*v1.ReplicaSet]
	pods   controller.Source[*v1.Pod]
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
		cfg.Workers = 5
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		dAPI: client.For[*v1.Deployment](d.Client), rsAPI: client.For[*v1.ReplicaSet](d.Client),
		deps: controller.For[*v1.Deployment](d.Informers), rss: controller.For[*v1.ReplicaSet](d.Informers),
		pods: controller.For[*v1.Pod](d.Informers), events: d.Recorder,
		log: log.With("controller", "deployment"), now: time.Now,
	}
	c.owners = controller.Owners[*v1.Deployment]{Source: c.deps, Kind: "Deployment",
		Selector: func(d *v1.Deployment) *v1.LabelSelector { return d.GetSpec().GetSelector() }}
	c.loop = controller.New(controller.Config{
		Name: "deployment", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.deps.HasSynced, c.rss.HasSynced, c.pods.HasSynced},
	})
	c.deps.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Deployment])
	c.rss.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.ReplicaSet])
	c.rss.AddIndex(controller.IndexOrphanNamespace, controller.OrphanNamespaceIndex[*v1.ReplicaSet])
	c.pods.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.Pod])
	enqueue := func(d *v1.Deployment) { c.loop.EnqueueObject(d) }
	c.deps.AddHandler(informer.Handler[*v1.Deployment]{OnAdd: enqueue, OnUpdate: func(_, d *v1.Deployment) { enqueue(d) }, OnDelete: enqueue})
	c.rss.AddHandler(informer.Handler[*v1.ReplicaSet]{OnAdd: c.addRS, OnUpdate: c.updateRS, OnDelete: c.deleteRS})
	c.pods.AddHandler(informer.Handler[*v1.Pod]{OnDelete: c.deletePod})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *Controller) addRS(rs *v1.ReplicaSet) {
	m := rs.GetMetadata()
	if ref := controller.ControllerRef(m); ref != nil {
		if d := c.owners.Of(m.Namespace, ref); d != nil {
			c.loop.EnqueueObject(d)
		}
		return
	}
	for _, d := range c.owners.Matching(rs.GetMetadata()) {
		c.loop.EnqueueObject(d)
	}
}

func (c *Controller) updateRS(old, cur *v1.ReplicaSet) {
	om, cm := old.GetMetadata(), cur.GetMetadata()
	if om.GetResourceVersion() == cm.GetResourceVersion() {
		return
	}
	oldRef, curRef := controller.ControllerRef(om), controller.ControllerRef(cm)
	if oldRef != nil && (curRef == nil || oldRef.Uid != curRef.Uid) {
		if d := c.owners.Of(om.Namespace, oldRef); d != nil {
			c.loop.EnqueueObject(d)
		}
	}
	if curRef != nil {
		if d := c.owners.Of(cm.Namespace, curRef); d != nil {
			c.loop.EnqueueObject(d)
		}
		return
	}
	for _, d := range c.owners.Matching(cur.GetMetadata()) {
		c.loop.EnqueueObject(d)
	}
}

func (c *Controller) deleteRS(rs *v1.ReplicaSet) {
	m := rs.GetMetadata()
	if d := c.owners.Of(m.Namespace, controller.ControllerRef(m)); d != nil {
		c.loop.EnqueueObject(d)
	}
}

// deletePod wakes a Recreate rollout waiting for old pods to go.
func (c *Controller) deletePod(p *v1.Pod) {
	m := p.GetMetadata()
	ref := controller.ControllerRef(m)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, ok := c.rss.Get(m.Namespace + "/" + ref.Name)
	if !ok {
		return
	}
	if d := c.owners.Of(m.Namespace, controller.ControllerRef(rs.GetMetadata())); d != nil && d.GetSpec().GetStrategy().GetType() == "Recreate" {
		c.loop.EnqueueObject(d)
	}
}
