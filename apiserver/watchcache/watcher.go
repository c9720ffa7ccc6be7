package watchcache

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Watcher is one client's subscription. Read Backlog first, then Events,
// until Done is closed; Err then says why.
type Watcher struct {
	c  *Cache
	ch chan *Event
	// queued is the size of the events in ch (Config.QueueBytes).
	queued  atomic.Int64
	backlog []*Event
	from    int64
	done    chan struct{}
	err     error
	// indexed: registered under value of the cache's Index
	// (WatchIndexed).
	indexed bool
	value   string
}

// TooLargeWait is how long a watch from a revision the cache has not seen
// waits for it (it may have just been written) before it is refused, as
// Kubernetes' watch cache does.
const TooLargeWait = 3 * time.Second

// Watch registers a watcher for every event after revision from (0: from
// now). It waits for the cache to be ready, and up to TooLargeWait for a
// revision newer than the cache's: one it does not reach by then is
// refused with apierrors.ErrResourceVersionTooLarge, never accepted to
// deliver nothing.
func (c *Cache) Watch(ctx context.Context, from int64) (*Watcher, error) {
	return c.register(ctx, from, false, "")
}

// WatchIndexed is Watch for a watcher that needs only the events of
// objects whose Config.Index field is value now or was before the change
// (its field selector pins the field to value): only those are queued for
// it, from the backlog and live. The caller still applies its selectors.
// Without an index it is Watch.
func (c *Cache) WatchIndexed(ctx context.Context, from int64, value string) (*Watcher, error) {
	return c.register(ctx, from, c.cfg.Index != nil, value)
}

func (c *Cache) register(ctx context.Context, from int64, indexed bool, value string) (*Watcher, error) {
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if from > c.rev {
		deadline := time.NewTimer(TooLargeWait)
		defer deadline.Stop()
		for expired := false; from > c.rev; {
			if expired {
				return nil, apierrors.New(apierrors.ErrResourceVersionTooLarge,
					"too large resource version: %d, current: %d (of %s); watch from a version a list or watch returned", from, c.rev, c.kind.Plural)
			}
			advanced := c.advanced
			select {
			case c.progressNow <- struct{}{}:
			default:
			}
			c.mu.Unlock()
			select {
			case <-advanced:
			case <-deadline.C:
				expired = true
			case <-ctx.Done():
			}
			c.mu.Lock()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	w := &Watcher{c: c, ch: make(chan *Event, c.cfg.QueueSize), done: make(chan struct{}), from: from, indexed: indexed, value: value}
	if from == 0 {
		w.from = c.rev
	} else {
		if from < c.startRev {
			return nil, apierrors.New(apierrors.ErrExpired,
				"too old resource version: %d (oldest available for %s is %d); re-list and watch from the list's version", from, c.kind.Plural, c.startRev)
		}
		for _, e := range c.ring {
			if e.Rev > from && c.wants(w, e) {
				w.backlog = append(w.backlog, e)
			}
		}
	}
	c.watchers[w] = struct{}{}
	if indexed {
		set := c.indexed[value]
		if set == nil {
			set = map[*Watcher]struct{}{}
			c.indexed[value] = set
		}
		set[w] = struct{}{}
	} else {
		c.unindexed[w] = struct{}{}
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.Watchers.WithLabelValues(c.kind.Plural).Inc()
	}
	return w, nil
}

// Next returns the next event with revision after the watcher's start, or
// an error once the watcher is closed or ctx ends.
func (w *Watcher) Next(ctx context.Context) (*Event, error) {
	for {
		var e *Event
		if len(w.backlog) > 0 {
			e, w.backlog = w.backlog[0], w.backlog[1:]
		} else {
			select {
			case e = <-w.ch:
				w.queued.Add(-e.size)
			case <-w.done:
				// Drain what was queued before the close? No: a closed
				// watcher is done; the client re-lists.
				return nil, w.err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if e.Rev <= w.from && e.Type != Bookmark {
			continue
		}
		if e.Type == Bookmark && e.Rev <= w.from {
			continue
		}
		w.from = e.Rev
		return e, nil
	}
}

// Stop unregisters the watcher.
func (w *Watcher) Stop() {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.removeLocked(w, nil)
}

func (c *Cache) removeLocked(w *Watcher, err error) {
	if _, ok := c.watchers[w]; !ok {
		return
	}
	delete(c.watchers, w)
	if w.indexed {
		set := c.indexed[w.value]
		delete(set, w)
		if len(set) == 0 {
			delete(c.indexed, w.value)
		}
	} else {
		delete(c.unindexed, w)
	}
	w.err = err
	close(w.done)
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.Watchers.WithLabelValues(c.kind.Plural).Dec()
	}
}
