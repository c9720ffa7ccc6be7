// Package informer keeps a local, indexed cache of one kind in step with
// the apiserver and tells handlers what changed. It is the one informer
// every Tugboat component uses.
//
// Loop: list (paged) -> replace the cache, emitting Add/Update/Delete for
// what differs -> watch from the list's version with bookmarks -> apply each
// event. A watch that breaks resumes from the last version seen (so nothing
// is missed or repeated); an Expired version re-lists; errors back off
// exponentially up to 10 s. Every ResyncPeriod, handlers get OnUpdate(obj,
// obj) for every cached object, so level-triggered controllers converge
// even if they dropped an event.
//
// Contract: handlers run on the informer's goroutine, one at a time, and must
// not block (enqueue a key and return). Objects handed out are shared with
// the cache: never mutate them; proto.Clone first. Cached objects have no
// metadata.managedFields (unless Options.KeepManagedFields): no component
// reads them, they are often the largest part of an object, and an update
// that leaves them out keeps the stored ones — as Kubernetes' scheduler and
// controller-manager trim them with an informer transform.
package informer

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Handler receives changes. Nil funcs are skipped.
type Handler[T v1.Object] struct {
	OnAdd    func(obj T)
	OnUpdate func(old, new T)
	OnDelete func(obj T)
}

// Options select and tune an informer.
type Options struct {
	Namespace     string
	LabelSelector string
	FieldSelector string
	// ResyncPeriod, if > 0, replays every object to OnUpdate at that interval.
	ResyncPeriod time.Duration
	Logger       *slog.Logger
	// KeepManagedFields caches metadata.managedFields too.
	KeepManagedFields bool
}

// IndexFunc returns the index values of an object.
type IndexFunc[T v1.Object] func(T) []string

// Informer is a list+watch cache of one kind.
type Informer[T v1.Object] struct {
	api  *client.Typed[T]
	opts Options
	log  *slog.Logger

	mu       sync.RWMutex
	items    map[string]T
	indexers map[string]IndexFunc[T]
	indices  map[string]map[string]map[string]struct{} // index -> value -> keys
	handlers []Handler[T]
	rv       int64
	synced   atomic.Bool
	syncedCh chan struct{}
}

// New makes an informer; add handlers and indexes, then Run it.
func New[T v1.Object](api *client.Typed[T], opts Options) *Informer[T] {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Informer[T]{
		api: api, opts: opts,
		log:      opts.Logger.With("informer", api.Kind().Plural),
		items:    map[string]T{},
		indexers: map[string]IndexFunc[T]{},
		indices:  map[string]map[string]map[string]struct{}{},
		syncedCh: make(chan struct{}),
	}
}

// AddHandler registers h; call before Run.
func (i *Informer[T]) AddHandler(h Handler[T]) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.handlers = append(i.handlers, h)
}

// AddIndex registers a named index; call before Run.
func (i *Informer[T]) AddIndex(name string, f IndexFunc[T]) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.indexers[name] = f
	i.indices[name] = map[string]map[string]struct{}{}
}

// HasSynced reports whether the first list has been applied.
func (i *Informer[T]) HasSynced() bool { return i.synced.Load() }

// WaitForSync blocks until the first list is applied or ctx ends.
func (i *Informer[T]) WaitForSync(ctx context.Context) bool {
	select {
	case <-i.syncedCh:
		return true
	case <-ctx.Done():
		return false
	}
}

// Get returns the cached object with key "ns/name" (or "name").
func (i *Informer[T]) Get(key string) (T, bool) {
	i.mu.RLock()
	defer i.mu.RUnlock()
	o, ok := i.items[key]
	return o, ok
}

// List returns every cached object.
func (i *Informer[T]) List() []T {
	i.mu.RLock()
	defer i.mu.RUnlock()
	out := make([]T, 0, len(i.items))
	for _, o := range i.items {
		out = append(out, o)
	}
	return out
}

// ByIndex returns the cached objects whose index name has value.
func (i *Informer[T]) ByIndex(name, value string) []T {
	i.mu.RLock()
	defer i.mu.RUnlock()
	keys := i.indices[name][value]
	out := make([]T, 0, len(keys))
	for k := range keys {
		out = append(out, i.items[k])
	}
	return out
}

// ResourceVersion is the newest version the cache reflects.
func (i *Informer[T]) ResourceVersion() int64 {
	i.mu.RLock()
	defer i.mu.RUnlock()
	return i.rv
}

// Run lists and watches until ctx ends.
func (i *Informer[T]) Run(ctx context.Context) error {
	backoff := newBackoff()
	var resync <-chan time.Time
	if i.opts.ResyncPeriod > 0 {
		t := time.NewTicker(i.opts.ResyncPeriod)
		defer t.Stop()
		resync = t.C
	}
	needList := true
	for ctx.Err() == nil {
		if needList {
			if err := i.list(ctx); err != nil {
				i.log.Warn("list failed", "err", err)
				backoff.wait(ctx)
				continue
			}
			needList = false
		}
		err := i.watch(ctx, resync)
		if ctx.Err() != nil {
			break
		}
		if apierrors.IsExpired(err) {
			i.log.Info("watch version expired; re-listing", "rv", i.ResourceVersion())
			needList = true
			continue
		}
		if err != nil {
			i.log.Debug("watch broke; resuming", "err", err, "rv", i.ResourceVersion())
			backoff.wait(ctx)
			continue
		}
		backoff.reset()
	}
	return nil
}

func (i *Informer[T]) list(ctx context.Context) error {
	items, rv, err := i.api.List(ctx, client.ListOptions{
		Namespace: i.opts.Namespace, LabelSelector: i.opts.LabelSelector, FieldSelector: i.opts.FieldSelector, Limit: 500,
	})
	if err != nil {
		return err
	}
	i.replace(items, rv)
	if i.synced.CompareAndSwap(false, true) {
		close(i.syncedCh)
	}
	return nil
}

// replace swaps the cache for a fresh list and tells handlers the difference.
func (i *Informer[T]) replace(items []T, rv int64) {
	fresh := make(map[string]T, len(items))
	for _, o := range items {
		i.trim(o)
		fresh[v1.Key(o)] = o
	}
	i.mu.Lock()
	old := i.items
	i.items = map[string]T{}
	for name := range i.indices {
		i.indices[name] = map[string]map[string]struct{}{}
	}
	for k, o := range fresh {
		i.storeLocked(k, o)
	}
	i.rv = rv
	handlers := i.handlers
	i.mu.Unlock()
	// Adds and updates in the order they were written, as a watch would
	// deliver them: a handler that tracks the newest version it has applied
	// (the scheduler does) then knows everything older is applied too.
	slices.SortStableFunc(items, func(a, b T) int {
		return cmp.Compare(a.GetMetadata().GetResourceVersion(), b.GetMetadata().GetResourceVersion())
	})
	for _, o := range items {
		k := v1.Key(o)
		prev, had := old[k]
		switch {
		case !had:
			for _, h := range handlers {
				if h.OnAdd != nil {
					h.OnAdd(o)
				}
			}
		case prev.GetMetadata().GetResourceVersion() != o.GetMetadata().GetResourceVersion():
			for _, h := range handlers {
				if h.OnUpdate != nil {
					h.OnUpdate(prev, o)
				}
			}
		}
	}
	for k, o := range old {
		if _, ok := fresh[k]; !ok {
			for _, h := range handlers {
				if h.OnDelete != nil {
					h.OnDelete(o)
				}
			}
		}
	}
}

func (i *Informer[T]) watch(ctx context.Context, resync <-chan time.Time) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := i.api.Watch(wctx, client.WatchOptions{
		Namespace: i.opts.Namespace, LabelSelector: i.opts.LabelSelector, FieldSelector: i.opts.FieldSelector,
		ResourceVersion: i.ResourceVersion(), Bookmarks: true,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	events := make(chan client.Event[T], 64)
	errc := make(chan error, 1)
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				errc <- err
				return
			}
			select {
			case events <- ev:
			case <-wctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case ev := <-events:
			i.apply(ev)
		case err := <-errc:
			// Apply what was received before the error.
		drain:
			for {
				select {
				case ev := <-events:
					i.apply(ev)
				default:
					break drain
				}
			}
			return err
		case <-resync:
			i.resync()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (i *Informer[T]) apply(ev client.Event[T]) {
	i.mu.Lock()
	if ev.ResourceVersion <= i.rv {
		i.mu.Unlock()
		return // already reflected (a resumed watch never repeats, but be safe)
	}
	i.rv = ev.ResourceVersion
	if ev.Type == "BOOKMARK" {
		i.mu.Unlock()
		return
	}
	i.trim(ev.Object)
	key := v1.Key(ev.Object)
	prev, had := i.items[key]
	if ev.Type == "DELETED" {
		i.deleteLocked(key)
	} else {
		i.storeLocked(key, ev.Object)
	}
	handlers := i.handlers
	i.mu.Unlock()
	for _, h := range handlers {
		switch {
		case ev.Type == "DELETED":
			if h.OnDelete != nil {
				h.OnDelete(ev.Object)
			}
		case had:
			if h.OnUpdate != nil {
				h.OnUpdate(prev, ev.Object)
			}
		default:
			if h.OnAdd != nil {
				h.OnAdd(ev.Object)
			}
		}
	}
}

// trim drops what the cache does not keep from an object just decoded
// (not yet shared).
func (i *Informer[T]) trim(o T) {
	if m := o.GetMetadata(); m != nil && !i.opts.KeepManagedFields {
		m.ManagedFields = nil
	}
}

func (i *Informer[T]) resync() {
	i.mu.RLock()
	items := make([]T, 0, len(i.items))
	for _, o := range i.items {
		items = append(items, o)
	}
	handlers := i.handlers
	i.mu.RUnlock()
	for _, o := range items {
		for _, h := range handlers {
			if h.OnUpdate != nil {
				h.OnUpdate(o, o)
			}
		}
	}
}

func (i *Informer[T]) storeLocked(key string, o T) {
	i.deleteLocked(key)
	i.items[key] = o
	for name, f := range i.indexers {
		for _, v := range f(o) {
			set := i.indices[name][v]
			if set == nil {
				set = map[string]struct{}{}
				i.indices[name][v] = set
			}
			set[key] = struct{}{}
		}
	}
}

func (i *Informer[T]) deleteLocked(key string) {
	old, ok := i.items[key]
	if !ok {
		return
	}
	delete(i.items, key)
	for name, f := range i.indexers {
		for _, v := range f(old) {
			if set := i.indices[name][v]; set != nil {
				delete(set, key)
				if len(set) == 0 {
					delete(i.indices[name], v)
				}
			}
		}
	}
}

// Copy returns a deep copy of a cached object, safe to modify.
func Copy[T v1.Object](o T) T { return proto.Clone(o).(T) }

type backoff struct{ d time.Duration }

func newBackoff() *backoff { return &backoff{d: 100 * time.Millisecond} }

func (b *backoff) wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(b.d):
	}
	b.d = min(b.d*2, 10*time.Second)
}

func (b *backoff) reset() { b.d = 100 * time.Millisecond }
