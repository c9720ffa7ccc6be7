// Package watchcache holds one etcd watch per kind and fans its events out
// to any number of API watchers.
//
// Loop: Run opens an etcd watch on the kind's prefix through storage
// (Store.WatchKind; this package never talks to etcd itself) (replaying a window of
// history so that clients resuming after an apiserver restart can continue),
// decodes each event once, appends it to a bounded ring of recent events and
// pushes it to every registered watcher's bounded queue without blocking.
// It also asks etcd for progress notifications at the bookmark interval and
// forwards them as bookmarks, so idle watchers learn the current revision.
//
// Indexed triggers (Kubernetes' watch cache indexers): a cache may index
// its watchers by one field (Config.Index; pods by spec.nodeName). A
// watcher whose field selector pins that field to a value (every
// kubelet's spec.nodeName=<node>) registers under the value
// (WatchIndexed) and is handed only the events whose object has the value
// now or had it before the change; the rest of its selector is applied by
// the caller as for any watcher. An event is then pushed to the watchers
// of at most two values plus the unindexed ones, not to all of them: with
// N nodes, one pod change costs O(1) queue sends instead of N sends and N
// watcher wake-ups. Bookmarks still go to every watcher.
//
// Contract: a watcher registered at revision R receives every event with
// revision > R exactly once, in order (a backlog from the ring, then live
// events, handed over under one lock). R older than the ring's start gets
// apierrors.ErrExpired. A watcher whose queue is full is removed and its
// Done channel closed with ErrTooSlow, and so is one whose queued events
// hold more than QueueBytes of values: it never stalls the others, and
// memory stays bounded by the ring plus, per watcher, QueueSize pointers
// and QueueBytes of events it alone keeps alive.
package watchcache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/storage"
)

// Event types.
const (
	Added    = "ADDED"
	Modified = "MODIFIED"
	Deleted  = "DELETED"
	Bookmark = "BOOKMARK"
)

// Event is one decoded change, shared read-only by every watcher.
type Event struct {
	Type string // Added, Modified, Deleted or Bookmark
	Obj  v1.Object
	Prev v1.Object // the object before the change; nil for Added
	Rev  int64
	// size is the stored size of the event's values (for QueueBytes).
	size int64

	once sync.Once
	any  *anypb.Any
}

// Any is the event object's wire form, marshalled once for all watchers.
func (e *Event) Any() *anypb.Any {
	e.once.Do(func() {
		a, err := anypb.New(e.Obj)
		if err == nil {
			e.any = a
		}
	})
	return e.any
}

// DefaultQueueBytes is Config.QueueBytes' default.
const DefaultQueueBytes = 16 << 20

// Config sizes a cache.
type Config struct {
	// Size is how many recent events the ring keeps (default 2000).
	Size int
	// QueueSize is each watcher's queue (default 1000).
	QueueSize int
	// QueueBytes caps the stored size of the events a watcher has queued
	// and not yet taken (default 16 MiB): a slow watcher of large objects
	// is cut off before it pins more.
	QueueBytes int64
	// BookmarkInterval is how often progress is requested (default 10s).
	BookmarkInterval time.Duration
	// Index, if set, is the field watchers may be indexed by.
	Index   *Index
	Metrics *Metrics
	Logger  *slog.Logger
}

// Index is a field a cache indexes its watchers by.
type Index struct {
	// Field is the field path, as a field selector names it
	// ("spec.nodeName").
	Field string
	// Value is an object's value of Field; obj may be nil ("").
	Value func(obj v1.Object) string
}

// PodNodeName indexes pod watchers by spec.nodeName, as Kubernetes' pod
// storage does (NodeNameTriggerFunc): every kubelet watches its own pods.
var PodNodeName = &Index{Field: "spec.nodeName", Value: func(obj v1.Object) string {
	p, _ := obj.(*v1.Pod)
	return p.GetSpec().GetNodeName()
}}

// Store is what a cache reads through; *storage.Store is one. Revision is
// etcd's current revision; WatchKind and Decode are as documented in
// package storage. Their errors end a watch, which Run reopens.
type Store interface {
	Revision(ctx context.Context) (int64, error)
	WatchKind(ctx context.Context, k *kinds.Kind, from int64) *storage.KindWatch
	Decode(k *kinds.Kind, key, value []byte, rev int64) (v1.Object, error)
}

// Cache is one kind's watch cache.
type Cache struct {
	kind  *kinds.Kind
	store Store
	cfg   Config
	log   *slog.Logger

	mu       sync.Mutex
	ring     []*Event // ordered by Rev
	startRev int64    // every event with Rev > startRev is in ring
	rev      int64    // newest revision known to be complete
	initRev  int64    // etcd's revision when Run started: ready once rev reaches it
	ready    chan struct{}
	watchers map[*Watcher]struct{}
	// unindexed are the watchers that get every event; indexed those
	// registered under a value of Config.Index (each also in watchers).
	unindexed map[*Watcher]struct{}
	indexed   map[string]map[*Watcher]struct{}
	// advanced is closed (and replaced) whenever rev grows, for watches
	// from a version the cache has not reached yet.
	advanced chan struct{}
	// progressNow asks the etcd watch for a progress notification now.
	progressNow chan struct{}
}

// setRevLocked moves rev forward and wakes who waits for it; caller
// holds mu.
func (c *Cache) setRevLocked(rev int64) {
	c.rev = rev
	close(c.advanced)
	c.advanced = make(chan struct{})
}

// New makes a cache for one kind; call Run to fill it.
func New(kind *kinds.Kind, store Store, cfg Config) *Cache {
	if cfg.Size <= 0 {
		cfg.Size = 2000
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 1000
	}
	if cfg.QueueBytes <= 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.BookmarkInterval <= 0 {
		cfg.BookmarkInterval = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Cache{
		kind:        kind,
		store:       store,
		cfg:         cfg,
		log:         cfg.Logger.With("kind", kind.Plural),
		ready:       make(chan struct{}),
		watchers:    map[*Watcher]struct{}{},
		unindexed:   map[*Watcher]struct{}{},
		indexed:     map[string]map[*Watcher]struct{}{},
		advanced:    make(chan struct{}),
		progressNow: make(chan struct{}, 1),
	}
}

// Run keeps the etcd watch open until ctx ends, re-opening it after errors.
func (c *Cache) Run(ctx context.Context) error {
	rev, err := c.store.Revision(ctx)
	if err != nil {
		return err
	}
	// Replay a window of history so resuming clients are served.
	from := rev - int64(c.cfg.Size) + 1
	if from < 1 {
		from = 1
	}
	c.mu.Lock()
	c.startRev = from - 1
	c.rev = from - 1
	c.initRev = rev
	c.mu.Unlock()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		next, err := c.watch(ctx, from)
		if ctx.Err() != nil {
			break
		}
		c.log.Warn("etcd watch ended; reopening", "err", err, "from", next)
		from = next
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	c.closeAll(apierrors.New(apierrors.ErrUnavailable, "apiserver is shutting down"))
	return nil
}

// watch consumes one etcd watch from revision from and returns the revision
// to resume from when it breaks.
func (c *Cache) watch(ctx context.Context, from int64) (int64, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := c.store.WatchKind(wctx, c.kind, from)
	defer w.Close()
	go func() {
		for {
			// Until the cache is ready, ask often: etcd does not answer a
			// progress request made before the watch has caught up, and
			// waiting a whole BookmarkInterval for the next one delayed
			// every apiserver start by that much.
			wait := c.cfg.BookmarkInterval
			select {
			case <-c.ready:
			default:
				wait = min(wait, 100*time.Millisecond)
			}
			select {
			case <-wctx.Done():
				return
			case <-time.After(wait):
				_ = w.RequestProgress(wctx)
			case <-c.progressNow:
				// A watch waits for a revision newer than ours: it may
				// be current in etcd, only not of this kind.
				_ = w.RequestProgress(wctx)
			}
		}
	}()
	for {
		resp := w.Next()
		if resp.Created {
			// The progress answer comes once the replay is sent: then the
			// cache is current and Ready.
			_ = w.RequestProgress(wctx)
			continue
		}
		if resp.CompactRevision != 0 {
			// History before the compaction is gone: start after it. Clients
			// older than that get Expired.
			c.log.Info("watch window compacted", "compactRevision", resp.CompactRevision)
			c.mu.Lock()
			c.trimBefore(resp.CompactRevision)
			if c.rev < resp.CompactRevision-1 {
				c.setRevLocked(resp.CompactRevision - 1)
			}
			c.mu.Unlock()
			return resp.CompactRevision, nil
		}
		if resp.Err != nil {
			return c.resumeFrom(from), resp.Err
		}
		if resp.Progress {
			c.progress(resp.Revision)
		} else {
			c.apply(resp.Changes)
		}
		if c.Revision() >= c.initRev {
			c.markReady()
		}
	}
}

func (c *Cache) resumeFrom(from int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rev+1 > from {
		return c.rev + 1
	}
	return from
}

func (c *Cache) markReady() {
	select {
	case <-c.ready:
	default:
		close(c.ready)
	}
}

// apply decodes events, appends them to the ring and fans them out.
func (c *Cache) apply(evs []storage.Change) {
	decoded := make([]*Event, 0, len(evs))
	for _, ev := range evs {
		e, err := c.decode(ev)
		if err != nil {
			c.log.Error("dropping undecodable event", "key", string(ev.Key), "err", err)
			continue
		}
		decoded = append(decoded, e)
	}
	c.publish(decoded)
}

// publish appends decoded events to the ring and fans them out.
func (c *Cache) publish(decoded []*Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range decoded {
		if e.Rev <= c.rev {
			continue // replayed after a re-watch
		}
		c.ring = append(c.ring, e)
		if len(c.ring) > c.cfg.Size {
			drop := len(c.ring) - c.cfg.Size
			c.startRev = c.ring[drop-1].Rev
			c.ring = append(c.ring[:0:0], c.ring[drop:]...)
		}
		c.setRevLocked(e.Rev)
		c.fanOut(e)
	}
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.Events.WithLabelValues(c.kind.Plural).Add(float64(len(decoded)))
	}
}

func (c *Cache) decode(ev storage.Change) (*Event, error) {
	e := &Event{Rev: ev.Rev, size: int64(len(ev.Value) + len(ev.PrevValue))}
	if len(ev.PrevValue) > 0 {
		prev, err := c.store.Decode(c.kind, ev.Key, ev.PrevValue, ev.PrevRev)
		if err != nil {
			return nil, err
		}
		e.Prev = prev
	}
	switch {
	case ev.Deleted:
		e.Type = Deleted
		if e.Prev == nil {
			// Without the previous value we still know the name.
			return nil, errors.New("delete event without previous value")
		}
		obj, _ := c.store.Decode(c.kind, ev.Key, ev.PrevValue, ev.Rev)
		e.Obj = obj
	default:
		obj, err := c.store.Decode(c.kind, ev.Key, ev.Value, ev.Rev)
		if err != nil {
			return nil, err
		}
		e.Obj = obj
		e.Type = Modified
		if ev.Created {
			e.Type = Added
			e.Prev = nil
		}
	}
	return e, nil
}

func (c *Cache) progress(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rev <= c.rev {
		return
	}
	c.setRevLocked(rev)
	bm := &Event{Type: Bookmark, Rev: rev}
	for w := range c.watchers {
		select {
		case w.ch <- bm:
		default: // a full queue skips a bookmark; it is not an error
		}
	}
}

// fanOut pushes e to every unindexed watcher and to the indexed ones
// under the index value of its object and of its previous object; it
// returns how many watchers it was pushed to. Caller holds mu.
func (c *Cache) fanOut(e *Event) int {
	n := 0
	for w := range c.unindexed {
		n += c.send(w, e)
	}
	if c.cfg.Index == nil || len(c.indexed) == 0 {
		return n
	}
	v := c.cfg.Index.Value(e.Obj)
	for w := range c.indexed[v] {
		n += c.send(w, e)
	}
	if e.Prev != nil {
		if pv := c.cfg.Index.Value(e.Prev); pv != v {
			for w := range c.indexed[pv] {
				n += c.send(w, e)
			}
		}
	}
	return n
}

// wants reports whether w is handed e (an indexed watcher only events of
// its value); for the backlog, which fanOut does not sort.
func (c *Cache) wants(w *Watcher, e *Event) bool {
	if !w.indexed || c.cfg.Index == nil {
		return true
	}
	if c.cfg.Index.Value(e.Obj) == w.value {
		return true
	}
	return e.Prev != nil && c.cfg.Index.Value(e.Prev) == w.value
}

// send queues e for w, or cuts w off if its queue is full (1 if queued);
// caller holds mu.
func (c *Cache) send(w *Watcher, e *Event) int {
	if w.queued.Load()+e.size > c.cfg.QueueBytes {
		c.cutOff(w, fmt.Sprintf("its queued events hold more than %d bytes", c.cfg.QueueBytes))
		return 0
	}
	select {
	case w.ch <- e:
		w.queued.Add(e.size)
		return 1
	default:
		c.cutOff(w, fmt.Sprintf("it fell more than %d events behind", c.cfg.QueueSize))
		return 0
	}
}

// cutOff removes a watcher that does not keep up; caller holds mu.
func (c *Cache) cutOff(w *Watcher, why string) {
	c.removeLocked(w, apierrors.New(apierrors.ErrTooSlow, "watch of %s closed: the client is too slow (%s); re-list and watch again", c.kind.Plural, why))
	if c.cfg.Metrics != nil {
		c.cfg.Metrics.SlowWatchers.WithLabelValues(c.kind.Plural).Inc()
	}
}

// trimBefore drops ring entries older than rev; caller holds mu.
func (c *Cache) trimBefore(rev int64) {
	i := 0
	for i < len(c.ring) && c.ring[i].Rev < rev {
		i++
	}
	if i > 0 {
		c.ring = append(c.ring[:0:0], c.ring[i:]...)
	}
	if c.startRev < rev-1 {
		c.startRev = rev - 1
	}
}

// Compacted tells the cache that etcd history before rev is gone: clients
// asking for older versions get Expired, as they would from etcd.
func (c *Cache) Compacted(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trimBefore(rev)
}

// IndexField is the field watchers can be indexed by (WatchIndexed), or
// "" if the cache has no index.
func (c *Cache) IndexField() string {
	if c.cfg.Index == nil {
		return ""
	}
	return c.cfg.Index.Field
}

// Ready is closed once the etcd watch is established.
func (c *Cache) Ready() <-chan struct{} { return c.ready }

// Revision is the newest revision the cache has seen complete.
func (c *Cache) Revision() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rev
}

func (c *Cache) closeAll(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for w := range c.watchers {
		c.removeLocked(w, err)
	}
}
