package controller

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Source is what a controller reads from and subscribes to: an informer's
// cache of one kind. The shared informers implement it; tests may wrap it
// (for example to delay delivery). Objects returned are shared: never
// mutate them.
type Source[T v1.Object] interface {
	// AddHandler subscribes h; handlers must only enqueue keys.
	AddHandler(h informer.Handler[T])
	// AddIndex registers a named index; call before the informers start.
	// Controllers share indexes by name, so one name means one function.
	AddIndex(name string, f informer.IndexFunc[T])
	Get(key string) (T, bool)
	List() []T
	ByIndex(name, value string) []T
	HasSynced() bool
}

// Informers hands out one informer per kind, shared by every controller
// that asks for it, so the controller-manager watches each kind once.
// Ask for every informer before Run; Run starts them all.
type Informers struct {
	client *client.Client
	resync time.Duration
	log    *slog.Logger

	mu      sync.Mutex
	byKind  map[string]*informer.Informer[v1.Object]
	indexes map[string]map[string]bool // kind -> index names registered
	started bool
}

// NewInformers makes a factory. resync > 0 replays every cached object to
// the handlers at that interval (a safety net for level-triggered loops).
func NewInformers(c *client.Client, resync time.Duration, log *slog.Logger) *Informers {
	if log == nil {
		log = slog.Default()
	}
	return &Informers{client: c, resync: resync, log: log,
		byKind: map[string]*informer.Informer[v1.Object]{}, indexes: map[string]map[string]bool{}}
}

func (f *Informers) informer(k *kinds.Kind) *informer.Informer[v1.Object] {
	f.mu.Lock()
	defer f.mu.Unlock()
	if inf, ok := f.byKind[k.Name]; ok {
		return inf
	}
	if f.started {
		panic(fmt.Sprintf("controller.Informers: informer for %s requested after Run", k.Name)) // programming error
	}
	inf := informer.New(client.ForKind(f.client, k), informer.Options{ResyncPeriod: f.resync, Logger: f.log})
	f.byKind[k.Name] = inf
	f.indexes[k.Name] = map[string]bool{}
	return inf
}

// addIndex registers an index once per kind and name.
func (f *Informers) addIndex(k *kinds.Kind, name string, fn informer.IndexFunc[v1.Object]) {
	inf := f.informer(k)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.indexes[k.Name][name] {
		return
	}
	f.indexes[k.Name][name] = true
	inf.AddIndex(name, fn)
}

// For returns the shared source of T's kind, e.g. For[*v1.Pod](f).
func For[T v1.Object](f *Informers) Source[T] {
	var zero T
	k, err := kinds.ForMessage(zero)
	if err != nil {
		panic(fmt.Sprintf("controller.For: %v", err)) // programming error: T is not a stored kind
	}
	return &view[T]{f: f, kind: k, inf: f.informer(k)}
}

// ForKind returns the shared source of a kind chosen at run time (the
// garbage collector's view of every kind).
func (f *Informers) ForKind(k *kinds.Kind) Source[v1.Object] {
	return &view[v1.Object]{f: f, kind: k, inf: f.informer(k)}
}

// Run runs every informer handed out until ctx ends.
func (f *Informers) Run(ctx context.Context) error {
	f.mu.Lock()
	f.started = true
	infs := make([]*informer.Informer[v1.Object], 0, len(f.byKind))
	for _, inf := range f.byKind {
		infs = append(infs, inf)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, inf := range infs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = inf.Run(ctx)
		}()
	}
	wg.Wait()
	return nil
}

// HasSynced reports whether every informer handed out has listed once.
func (f *Informers) HasSynced() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, inf := range f.byKind {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}

// view is a typed view of an untyped shared informer.
type view[T v1.Object] struct {
	f    *Informers
	kind *kinds.Kind
	inf  *informer.Informer[v1.Object]
}

func (v *view[T]) AddHandler(h informer.Handler[T]) {
	var u informer.Handler[v1.Object]
	if h.OnAdd != nil {
		u.OnAdd = func(o v1.Object) { h.OnAdd(o.(T)) }
	}
	if h.OnUpdate != nil {
		u.OnUpdate = func(old, cur v1.Object) { h.OnUpdate(old.(T), cur.(T)) }
	}
	if h.OnDelete != nil {
		u.OnDelete = func(o v1.Object) { h.OnDelete(o.(T)) }
	}
	v.inf.AddHandler(u)
}

func (v *view[T]) AddIndex(name string, fn informer.IndexFunc[T]) {
	v.f.addIndex(v.kind, name, func(o v1.Object) []string { return fn(o.(T)) })
}

func (v *view[T]) Get(key string) (T, bool) {
	o, ok := v.inf.Get(key)
	if !ok {
		var zero T
		return zero, false
	}
	return o.(T), true
}

func (v *view[T]) List() []T { return cast[T](v.inf.List()) }

func (v *view[T]) ByIndex(name, value string) []T { return cast[T](v.inf.ByIndex(name, value)) }

func (v *view[T]) HasSynced() bool { return v.inf.HasSynced() }

func cast[T v1.Object](in []v1.Object) []T {
	out := make([]T, len(in))
	for i, o := range in {
		out[i] = o.(T)
	}
	return out
}
