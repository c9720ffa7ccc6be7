package endpoints

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// indexSliceService indexes EndpointSlices by "namespace/service" (their
// kubernetes.io/service-name label).
const indexSliceService = "endpointslice-service"

func sliceServiceIndex(s *v1.EndpointSlice) []string {
	if n := s.GetMetadata().GetLabels()[LabelServiceName]; n != "" {
		return []string{s.GetMetadata().GetNamespace() + "/" + n}
	}
	return nil
}

// SliceConfig tunes the EndpointSlice controller.
type SliceConfig struct {
	// Workers is how many Services sync at once
	// (--concurrent-service-endpoint-syncs, default 5).
	Workers int
	// MaxEndpointsPerSlice caps each slice (--max-endpoints-per-slice,
	// default 100, at most 1000).
	MaxEndpointsPerSlice int
}

// Validate names the first bad field.
func (c *SliceConfig) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-service-endpoint-syncs: must be >= 0, got %d", c.Workers)
	}
	if c.MaxEndpointsPerSlice < 0 || c.MaxEndpointsPerSlice > 1000 {
		return fmt.Errorf("--max-endpoints-per-slice: must be between 1 and 1000, got %d", c.MaxEndpointsPerSlice)
	}
	return nil
}

// SliceController is the EndpointSlice controller: for every Service it
// keeps the slices labelled kubernetes.io/service-name=<service> equal to
// the Service's endpoints (PodEndpoints for a Service with a selector,
// MirroredEndpoints of its Endpoints object for one without), at most
// MaxEndpointsPerSlice per slice (PlanSlices). The slices are owned by the
// Service (the garbage collector removes them with it) and deleted by the
// controller when the Service goes. Slices another manager wrote are left
// alone.
//
// Loop: Service, Pod (the Services whose selector matches the pod's old or
// new labels), Endpoints (selectorless Services: mirroring) and
// EndpointSlice events enqueue the Service; sync plans from the caches
// and writes the difference (creates with generateName, compare-and-swap
// updates, deletes). A stale cache shows up as a Conflict or AlreadyExists
// and is retried with backoff.
type SliceController struct {
	svcs     controller.Source[*v1.Service]
	pods     controller.Source[*v1.Pod]
	eps      controller.Source[*v1.Endpoints]
	slices   controller.Source[*v1.EndpointSlice]
	nodes    controller.Source[*v1.Node]
	sliceAPI *client.Typed[*v1.EndpointSlice]
	events   controller.Recorder
	max      int
	loop     *controller.Controller
	written  *sliceTracker
}

// NewSlices builds the EndpointSlice controller on the shared informers.
func NewSlices(d controller.Deps, cfg SliceConfig) (*SliceController, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	if cfg.MaxEndpointsPerSlice == 0 {
		cfg.MaxEndpointsPerSlice = MaxEndpointsPerSlice
	}
	c := &SliceController{
		svcs: controller.For[*v1.Service](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		eps: controller.For[*v1.Endpoints](d.Informers), slices: controller.For[*v1.EndpointSlice](d.Informers),
		nodes: controller.For[*v1.Node](d.Informers), sliceAPI: client.For[*v1.EndpointSlice](d.Client),
		events: d.Recorder, max: cfg.MaxEndpointsPerSlice, written: newSliceTracker(),
	}
	c.loop = controller.New(controller.Config{
		Name: "endpointslice", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: d.Logger,
		Synced: []func() bool{c.svcs.HasSynced, c.pods.HasSynced, c.eps.HasSynced, c.slices.HasSynced, c.nodes.HasSynced},
	})
	c.svcs.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Service])
	c.pods.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Pod])
	c.slices.AddIndex(indexSliceService, sliceServiceIndex)
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
	// Endpoints matter only to selectorless Services (mirroring); sync
	// ignores the others.
	c.eps.AddHandler(informer.Handler[*v1.Endpoints]{
		OnAdd:    func(e *v1.Endpoints) { enqueue(e) },
		OnUpdate: func(_, e *v1.Endpoints) { enqueue(e) },
		OnDelete: func(e *v1.Endpoints) { enqueue(e) },
	})
	sliceChanged := func(s *v1.EndpointSlice) {
		for _, k := range sliceServiceIndex(s) {
			c.loop.Enqueue(k)
		}
	}
	c.slices.AddHandler(informer.Handler[*v1.EndpointSlice]{
		OnAdd:    sliceChanged,
		OnUpdate: func(_, s *v1.EndpointSlice) { sliceChanged(s) },
		OnDelete: sliceChanged,
	})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *SliceController) Run(ctx context.Context) error { return c.loop.Run(ctx) }

func (c *SliceController) enqueueServicesOf(pod, old *v1.Pod) {
	for _, s := range c.svcs.ByIndex(controller.IndexNamespace, pod.GetMetadata().GetNamespace()) {
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

func (c *SliceController) zoneOf(node string) string {
	n, ok := c.nodes.Get(node)
	if !ok {
		return ""
	}
	return n.GetMetadata().GetLabels()[LabelZone]
}

func (c *SliceController) sync(ctx context.Context, key string) error {
	if !c.written.seen(key, c.slices.Get) {
		// The cache has not shown our last writes yet: planning from it
		// would make the same slices twice. The slice events requeue.
		c.loop.EnqueueAfter(key, 100*time.Millisecond)
		return nil
	}
	svc, ok := c.svcs.Get(key)
	if ok && svc.GetMetadata().GetDeletionTimestamp() != nil {
		return nil // the garbage collector takes the slices with the Service
	}
	var groups map[string]*endpointGroup
	managedBy := ManagedBySlices
	switch {
	case !ok:
	case svc.GetSpec().GetType() == "ExternalName":
		ok = false // no endpoints: its slices, if any, go
	case len(svc.GetSpec().GetSelector()) > 0:
		selector := labels.SelectorFromSet(svc.GetSpec().GetSelector())
		var pods []*v1.Pod
		for _, p := range c.pods.ByIndex(controller.IndexNamespace, svc.GetMetadata().GetNamespace()) {
			if selector.Matches(p.GetMetadata().GetLabels()) {
				pods = append(pods, p)
			}
		}
		groups = PodEndpoints(svc, pods, c.zoneOf)
	default:
		managedBy = ManagedByMirroring
		eps, have := c.eps.Get(key)
		if !have {
			ok = false
		} else {
			groups = MirroredEndpoints(eps)
		}
	}
	// The Service's slices by this manager are reconciled; those of the
	// other (the Service gained or lost its selector) go.
	var mine, stale []*v1.EndpointSlice
	for _, s := range c.slices.ByIndex(indexSliceService, key) {
		switch s.GetMetadata().GetLabels()[LabelManagedBy] {
		case managedBy:
			mine = append(mine, s)
		case ManagedBySlices, ManagedByMirroring:
			stale = append(stale, s)
		}
	}
	var plan SlicePlan
	if ok {
		plan = PlanSlices(mine, groups, c.max, func() *v1.ObjectMeta { return c.sliceMeta(svc, managedBy) })
	} else {
		stale = append(stale, mine...)
	}
	plan.Delete = append(plan.Delete, stale...)
	for _, s := range plan.Delete {
		m := s.GetMetadata()
		if _, err := c.sliceAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{ResourceVersion: m.GetResourceVersion()}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting endpointslice %s/%s: %w", m.GetNamespace(), m.GetName(), err)
		}
		c.written.wrote(key, m.GetNamespace()+"/"+m.GetName(), 0)
	}
	for _, s := range plan.Update {
		got, err := c.sliceAPI.Update(ctx, s)
		if err == nil {
			c.written.wrote(key, v1.Key(got), got.GetMetadata().GetResourceVersion())
		}
		if err != nil {
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				return fmt.Errorf("endpointslice %s changed while updating; retrying: %w", s.GetMetadata().GetName(), err)
			}
			c.failed(svc, err)
			return fmt.Errorf("updating endpointslice %s: %w", s.GetMetadata().GetName(), err)
		}
	}
	for _, s := range plan.Create {
		got, err := c.sliceAPI.Create(ctx, s)
		if err != nil {
			c.failed(svc, err)
			return fmt.Errorf("creating an endpointslice for %s: %w", key, err)
		}
		c.written.wrote(key, v1.Key(got), got.GetMetadata().GetResourceVersion())
	}
	return nil
}

func (c *SliceController) failed(svc *v1.Service, err error) {
	if c.events != nil && svc != nil {
		c.events.Eventf(svc, controller.Warning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s: %v", v1.Key(svc), err)
	}
}

// sliceMeta is the metadata of a new slice of svc.
func (c *SliceController) sliceMeta(svc *v1.Service, managedBy string) *v1.ObjectMeta {
	m := svc.GetMetadata()
	l := maps.Clone(m.GetLabels())
	if l == nil {
		l = map[string]string{}
	}
	l[LabelServiceName] = m.GetName()
	l[LabelManagedBy] = managedBy
	return &v1.ObjectMeta{Namespace: m.GetNamespace(), GenerateName: m.GetName() + "-", Labels: l,
		OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(svc, "v1", "Service")}}
}

// sliceTracker remembers, per Service, the slices the controller wrote
// and the version it wrote (0: deleted) until the cache shows them, as
// Kubernetes' endpointSliceTracker does: planning from a cache that lacks
// a slice just created would create its endpoints again. Entries older
// than a minute count as seen, so a lost event cannot wedge a Service.
type sliceTracker struct {
	mu sync.Mutex
	m  map[string]map[string]trackedWrite // service key -> slice key -> write
}

type trackedWrite struct {
	version int64
	at      time.Time
}

func newSliceTracker() *sliceTracker { return &sliceTracker{m: map[string]map[string]trackedWrite{}} }

func (t *sliceTracker) wrote(svc, slice string, version int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m[svc] == nil {
		t.m[svc] = map[string]trackedWrite{}
	}
	t.m[svc][slice] = trackedWrite{version: version, at: time.Now()}
}

// seen reports whether the cache (get) shows every write made for svc,
// forgetting those it does.
func (t *sliceTracker) seen(svc string, get func(string) (*v1.EndpointSlice, bool)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, w := range t.m[svc] {
		cur, ok := get(key)
		switch {
		case time.Since(w.at) > time.Minute,
			w.version == 0 && !ok,
			w.version != 0 && ok && cur.GetMetadata().GetResourceVersion() >= w.version:
			delete(t.m[svc], key)
		}
	}
	if len(t.m[svc]) == 0 {
		delete(t.m, svc)
		return true
	}
	return false
}
