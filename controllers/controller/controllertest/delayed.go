package controllertest

import (
	"context"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Delayed wraps a source so that its consumer sees every change Delay
// after the real watch delivered it: both the cache it reads and the
// handlers it subscribed lag, in order, exactly like a slow watch. Run it.
type Delayed[T v1.Object] struct {
	inner controller.Source[T]
	delay time.Duration

	mu       sync.Mutex
	items    map[string]T
	indexes  map[string]informer.IndexFunc[T]
	handlers []informer.Handler[T]
	pending  []delayedEvent[T]
	wake     chan struct{}
	synced   bool
}

type delayedEvent[T v1.Object] struct {
	at       time.Time
	old, cur T
	kind     int // 0 add, 1 update, 2 delete
}

// NewDelayed subscribes to inner; call before the informers start.
func NewDelayed[T v1.Object](inner controller.Source[T], delay time.Duration) *Delayed[T] {
	d := &Delayed[T]{inner: inner, delay: delay, items: map[string]T{}, indexes: map[string]informer.IndexFunc[T]{},
		wake: make(chan struct{}, 1)}
	var zero T
	inner.AddHandler(informer.Handler[T]{
		OnAdd:    func(o T) { d.push(delayedEvent[T]{kind: 0, cur: o, old: zero}) },
		OnUpdate: func(old, cur T) { d.push(delayedEvent[T]{kind: 1, old: old, cur: cur}) },
		OnDelete: func(o T) { d.push(delayedEvent[T]{kind: 2, cur: o}) },
	})
	return d
}

func (d *Delayed[T]) push(ev delayedEvent[T]) {
	ev.at = time.Now().Add(d.delay)
	d.mu.Lock()
	d.pending = append(d.pending, ev)
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers delayed events until ctx ends.
func (d *Delayed[T]) Run(ctx context.Context) {
	for {
		d.mu.Lock()
		var next *delayedEvent[T]
		if len(d.pending) > 0 {
			ev := d.pending[0]
			next = &ev
		} else if d.inner.HasSynced() {
			d.synced = true
		}
		d.mu.Unlock()
		if next == nil {
			select {
			case <-ctx.Done():
				return
			case <-d.wake:
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if wait := time.Until(next.at); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		d.mu.Lock()
		d.pending = d.pending[1:]
		key := v1.Key(next.cur)
		if next.kind == 2 {
			delete(d.items, key)
		} else {
			d.items[key] = next.cur
		}
		handlers := d.handlers
		d.mu.Unlock()
		for _, h := range handlers {
			switch {
			case next.kind == 0 && h.OnAdd != nil:
				h.OnAdd(next.cur)
			case next.kind == 1 && h.OnUpdate != nil:
				h.OnUpdate(next.old, next.cur)
			case next.kind == 2 && h.OnDelete != nil:
				h.OnDelete(next.cur)
			}
		}
	}
}

// AddHandler implements controller.Source.
func (d *Delayed[T]) AddHandler(h informer.Handler[T]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handlers = append(d.handlers, h)
}

// AddIndex implements controller.Source.
func (d *Delayed[T]) AddIndex(name string, f informer.IndexFunc[T]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.indexes[name] = f
}

// Get implements controller.Source.
func (d *Delayed[T]) Get(key string) (T, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, ok := d.items[key]
	return o, ok
}

// List implements controller.Source.
func (d *Delayed[T]) List() []T {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]T, 0, len(d.items))
	for _, o := range d.items {
		out = append(out, o)
	}
	return out
}

// ByIndex implements controller.Source (by scanning: tests are small).
func (d *Delayed[T]) ByIndex(name, value string) []T {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.indexes[name]
	var out []T
	for _, o := range d.items {
		for _, v := range f(o) {
			if v == value {
				out = append(out, o)
				break
			}
		}
	}
	return out
}

// HasSynced implements controller.Source: the inner source has listed and
// its list has been delivered.
func (d *Delayed[T]) HasSynced() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.synced
}
