// Package endpoints is the Endpoints controller: it keeps, for every
// Service with a selector, an Endpoints object of the same name equal to
// the pods the selector matches (ready pods as addresses, the others as
// notReadyAddresses, target ports resolved per pod; see Subsets).
//
// Loop (on the controller skeleton): Service events enqueue the Service;
// Pod events enqueue every Service of the pod's namespace whose selector
// matches the pod's old or new labels; Endpoints events enqueue the
// Service of the same name, so an Endpoints object edited or deleted by
// someone else is put back. Sync reads the Service and the pods from the
// caches and creates, updates (compare-and-swap on resourceVersion) or
// deletes the Endpoints object; it writes nothing when the object is
// already right.
//
// Contract: a Service without a selector is left alone (its Endpoints are
// the user's, as in Kubernetes); the Endpoints of a deleted Service are
// deleted. A write that conflicts is retried with backoff from fresh
// caches.
package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Config tunes the controller.
type Config struct {
	// Workers is how many Services sync at once (--concurrent-endpoint-syncs, default 5).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-endpoint-syncs: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller is the Endpoints controller.
type Controller struct {
	svcs   controller.Source[*v1.Service]
	pods   controller.Source[*v1.Pod]
	eps    controller.Source[*v1.Endpoints]
	epsAPI *client.Typed[*v1.Endpoints]
	events controller.Recorder
	loop   *controller.Controller
	log    *slog.Logger
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
		svcs: controller.For[*v1.Service](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		eps: controller.For[*v1.Endpoints](d.Informers), epsAPI: client.For[*v1.Endpoints](d.Client),
		events: d.Recorder, log: log.With("controller", "endpoints"),
	}
	c.loop = controller.New(controller.Config{
		Name: "endpoints", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.svcs.HasSynced, c.pods.HasSynced, c.eps.HasSynced},
	})
	c.svcs.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Service])
	c.pods.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Pod])
	enqueue := func(o v1.Object) { c.loop.EnqueueObject(o) }
	c.svcs.AddHandler(informer.Handler[*v1.Service]{
		OnAdd:    func(s *v1.Service) { enqueue(s) },
		OnUpdate: func(_, s *v1.Service) { enqueue(s) },
		OnDelete: func(s *v1.Service) { enqueue(s) },
	})
	c.pods.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd:    func(p *v1.Pod) { c.enqueueServicesOf(p, nil) },
		OnUpdate: func(old, p *v1.Pod) { c.enqueueServicesOf(p, old) },
		OnDelete: func(p *v1.Pod) { c.enqueueServicesOf(p, nil) },
	})
	c.eps.AddHandler(informer.Handler[*v1.Endpoints]{
		OnUpdate: func(_, e *v1.Endpoints) { enqueue(e) },
		OnDelete: func(e *v1.Endpoints) { enqueue(e) },
	})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// enqueueServicesOf queues the Services whose selector matches pod (or
// old, the pod before an update: a pod whose labels stopped matching must
// leave its old Services).
func (c *Controller) enqueueServicesOf(pod, old *v1.Pod) {
	ns := pod.GetMetadata().GetNamespace()
	for _, s := range c.svcs.ByIndex(controller.IndexNamespace, ns) {
		sel := s.GetSpec().GetSelector()
		if len(sel) == 0 {
			continue
		}
		selector := labels.SelectorFromSet(sel)
		if selector.Matches(pod.GetMetadata().GetLabels()) || (old != nil && selector.Matches(old.GetMetadata().GetLabels())) {
			c.loop.EnqueueObject(s)
		}
	}
}

func (c *Controller) sync(ctx context.Context, key string) error {
	svc, ok := c.svcs.Get(key)
	cur, have := c.eps.Get(key)
	if !ok {
		if !have {
			return nil
		}
		m := cur.GetMetadata()
		_, err := c.epsAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{ResourceVersion: m.GetResourceVersion()})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("deleting endpoints %s of a deleted service: %w", key, err)
		}
		c.log.Debug("deleted endpoints of a deleted service", "service", key)
		return nil
	}
	sel := svc.GetSpec().GetSelector()
	if len(sel) == 0 {
		return nil // the user manages this Service's Endpoints
	}
	if svc.GetMetadata().GetDeletionTimestamp() != nil {
		return nil
	}
	m := svc.GetMetadata()
	selector := labels.SelectorFromSet(sel)
	var pods []*v1.Pod
	for _, p := range c.pods.ByIndex(controller.IndexNamespace, m.GetNamespace()) {
		if selector.Matches(p.GetMetadata().GetLabels()) {
			pods = append(pods, p)
		}
	}
	subsets := Subsets(svc, pods)
	if !have {
		want := &v1.Endpoints{Metadata: &v1.ObjectMeta{Namespace: m.GetNamespace(), Name: m.GetName(), Labels: maps.Clone(m.GetLabels())}, Subsets: subsets}
		if _, err := c.epsAPI.Create(ctx, want); err != nil {
			return fmt.Errorf("creating endpoints %s: %w", key, err) // AlreadyExists: the cache lags; retried
		}
		c.log.Debug("created endpoints", "service", key, "pods", len(pods))
		return nil
	}
	if equalSubsets(cur.GetSubsets(), subsets) && maps.Equal(cur.GetMetadata().GetLabels(), m.GetLabels()) {
		return nil
	}
	next := informer.Copy(cur)
	next.Subsets = subsets
	next.Metadata.Labels = maps.Clone(m.GetLabels())
	if _, err := c.epsAPI.Update(ctx, next); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return fmt.Errorf("endpoints %s changed while updating; retrying: %w", key, err)
		}
		if c.events != nil {
			c.events.Eventf(svc, controller.Warning, "FailedToUpdateEndpoint", "Failed to update endpoint %s: %v", key, err)
		}
		return fmt.Errorf("updating endpoints %s: %w", key, err)
	}
	c.log.Debug("updated endpoints", "service", key, "pods", len(pods))
	return nil
}

func equalSubsets(a, b []*v1.EndpointSubset) bool {
	return slices.EqualFunc(a, b, func(x, y *v1.EndpointSubset) bool { return proto.Equal(x, y) })
}
