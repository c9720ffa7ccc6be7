// Package queue holds the pods waiting for a node, in three places:
//
//   - active: ready to be tried, highest spec.priority first, then oldest;
//   - backoff: failed recently, waiting out an exponential backoff
//     (InitialBackoff doubling per attempt up to MaxBackoff);
//   - unschedulable: no node fitted at the last attempt. They wait for a
//     cluster event that could change a refusing filter's answer (a node
//     added or changed, a pod removed; see framework.ClusterEvent), or for
//     UnschedulableTimeout as a last resort, then go back to active (or to
//     backoff if their backoff has not passed yet).
//
// Loop: informer handlers call Add, Update and Delete; the scheduling
// goroutine calls Pop, then exactly one of Done (assumed and handed to the
// binder), AddUnschedulable or AddBackoff; the binder calls AddBackoff
// when a bind fails. Run moves pods whose time has come.
//
// Contract: a pod is in at most one place at a time; a popped pod is "in
// flight" until its attempt ends. A move event that arrives while a pod is
// in flight is not lost: that pod goes to backoff instead of unschedulable.
package queue

import (
	"container/heap"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tugboat/tugboat/scheduler/framework"
)

// ErrClosed is returned by Pop once the queue is closed.
var ErrClosed = errors.New("scheduling queue closed")

// Config tunes a queue.
type Config struct {
	// InitialBackoff is the wait after a pod's first failed attempt
	// (default 1s); it doubles per attempt up to MaxBackoff (default 10s).
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// UnschedulableTimeout is the longest an unschedulable pod waits for an
	// event before it is tried again anyway (default 5m).
	UnschedulableTimeout time.Duration
	// Now is the clock (tests).
	Now func() time.Time
}

// where a QueuedPod is.
const (
	deleted  = -1
	inActive = iota
	inBackoff
	inUnschedulable
	inFlight
)

// QueuedPod is a pod in the queue with its scheduling history.
type QueuedPod struct {
	Info *framework.PodInfo
	// Attempts counts the pops.
	Attempts int
	// Enqueued is when the pod first entered the queue.
	Enqueued time.Time

	where     int
	index     int       // in its heap
	timestamp time.Time // when it last entered active (ordering)
	failedAt  time.Time // end of the last failed attempt
	events    framework.ClusterEvent
	cycle     int64 // the scheduling cycle of its last pop
}

// Queue is the scheduling queue.
type Queue struct {
	cfg Config

	mu            sync.Mutex
	cond          *sync.Cond
	pods          map[string]*QueuedPod // everything queued or in flight
	active        podHeap
	backoff       podHeap
	unschedulable map[string]*QueuedPod
	cycle         int64 // bumped by every Pop
	moveCycle     int64 // cycle of the last move event
	closed        bool
	lastTimeout   time.Time // when Flush last looked for timed-out unschedulable pods
}

// New makes an empty queue.
func New(cfg Config) *Queue {
	if cfg.InitialBackoff <= 0 {
		cfg.InitialBackoff = time.Second
	}
	if cfg.MaxBackoff < cfg.InitialBackoff {
		cfg.MaxBackoff = max(10*time.Second, cfg.InitialBackoff)
	}
	if cfg.UnschedulableTimeout <= 0 {
		cfg.UnschedulableTimeout = 5 * time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	q := &Queue{
		cfg:           cfg,
		pods:          map[string]*QueuedPod{},
		active:        podHeap{less: activeLess},
		backoff:       podHeap{less: backoffLess(cfg)},
		unschedulable: map[string]*QueuedPod{},
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func activeLess(a, b *QueuedPod) bool {
	pa, pb := a.Info.Pod.GetSpec().GetPriority(), b.Info.Pod.GetSpec().GetPriority()
	if pa != pb {
		return pa > pb
	}
	return a.timestamp.Before(b.timestamp)
}

func backoffLess(cfg Config) func(a, b *QueuedPod) bool {
	return func(a, b *QueuedPod) bool { return backoffEnd(cfg, a).Before(backoffEnd(cfg, b)) }
}

// backoffEnd is when a failed pod may be tried again.
func backoffEnd(cfg Config, qp *QueuedPod) time.Time {
	d := cfg.InitialBackoff
	for i := 1; i < qp.Attempts && d < cfg.MaxBackoff; i++ {
		d *= 2
	}
	return qp.failedAt.Add(min(d, cfg.MaxBackoff))
}

// Add queues a new pending pod; a pod already known is updated instead.
func (q *Queue) Add(pi *framework.PodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp := q.pods[pi.Key]; qp != nil {
		qp.Info = pi
		return
	}
	now := q.cfg.Now()
	qp := &QueuedPod{Info: pi, Enqueued: now}
	q.pods[pi.Key] = qp
	q.toActiveLocked(qp, now)
}

// Update replaces a queued pod's info after a change to its spec or
// labels; an unschedulable pod is tried again (the change may help). An
// unknown pod is added.
func (q *Queue) Update(pi *framework.PodInfo) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp := q.pods[pi.Key]
	if qp == nil {
		now := q.cfg.Now()
		qp = &QueuedPod{Info: pi, Enqueued: now}
		q.pods[pi.Key] = qp
		q.toActiveLocked(qp, now)
		return
	}
	qp.Info = pi
	if qp.where == inUnschedulable {
		delete(q.unschedulable, pi.Key)
		q.requeueLocked(qp, q.cfg.Now())
	}
}

// Delete drops a pod (deleted, bound, or no longer ours).
func (q *Queue) Delete(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	qp := q.pods[key]
	if qp == nil {
		return
	}
	delete(q.pods, key)
	switch qp.where {
	case inActive:
		heap.Remove(&q.active, qp.index)
	case inBackoff:
		heap.Remove(&q.backoff, qp.index)
	case inUnschedulable:
		delete(q.unschedulable, key)
	}
	qp.where = deleted
}

func (q *Queue) toActiveLocked(qp *QueuedPod, now time.Time) {
	qp.where = inActive
	qp.timestamp = now
	heap.Push(&q.active, qp)
	q.cond.Signal()
}

// requeueLocked puts a pod leaving unschedulable or in-flight into backoff
// if its backoff has not passed, else into active.
func (q *Queue) requeueLocked(qp *QueuedPod, now time.Time) {
	if qp.Attempts > 0 && now.Before(backoffEnd(q.cfg, qp)) {
		qp.where = inBackoff
		heap.Push(&q.backoff, qp)
		return
	}
	q.toActiveLocked(qp, now)
}

// Pop blocks until a pod is active and returns it, in flight. It fails
// with ctx's error or ErrClosed.
func (q *Queue) Pop(ctx context.Context) (*QueuedPod, error) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.active.Len() == 0 {
		if q.closed {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.cond.Wait()
	}
	qp := heap.Pop(&q.active).(*QueuedPod)
	q.cycle++
	qp.cycle = q.cycle
	qp.Attempts++
	qp.where = inFlight
	return qp, nil
}

// Done ends a successful attempt: the pod leaves the queue.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if qp := q.pods[key]; qp != nil && qp.where == inFlight {
		delete(q.pods, key)
		qp.where = 0
	}
}

// AddUnschedulable ends an attempt that found no node. The pod waits for
// one of events (or for a move that happened during the attempt).
func (q *Queue) AddUnschedulable(qp *QueuedPod, events framework.ClusterEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pods[qp.Info.Key] != qp || qp.where != inFlight {
		return // deleted while in flight
	}
	now := q.cfg.Now()
	qp.failedAt = now
	qp.events = events
	if q.moveCycle >= qp.cycle {
		// Something changed while we were deciding: it may have helped.
		qp.where = inBackoff
		heap.Push(&q.backoff, qp)
		return
	}
	qp.where = inUnschedulable
	q.unschedulable[qp.Info.Key] = qp
}

// AddBackoff ends an attempt that failed for another reason (an error, a
// failed bind): the pod is tried again after its backoff. A pod that left
// the queue with Done comes back.
func (q *Queue) AddBackoff(qp *QueuedPod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	cur := q.pods[qp.Info.Key]
	switch {
	case cur == nil && qp.where == 0:
		q.pods[qp.Info.Key] = qp // done earlier; its bind failed
	case cur != qp || qp.where != inFlight:
		return // deleted, or queued again meanwhile
	}
	qp.failedAt = q.cfg.Now()
	qp.where = inBackoff
	heap.Push(&q.backoff, qp)
}

// MoveAllToActive retries the unschedulable pods that event may help.
func (q *Queue) MoveAllToActive(event framework.ClusterEvent) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.moveCycle = q.cycle
	now := q.cfg.Now()
	for key, qp := range q.unschedulable {
		if qp.events&event == 0 {
			continue
		}
		delete(q.unschedulable, key)
		q.requeueLocked(qp, now)
	}
}

// Flush moves pods whose backoff has passed to active, and pods waiting in
// unschedulable for longer than UnschedulableTimeout to active or backoff.
func (q *Queue) Flush() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Now()
	for q.backoff.Len() > 0 && !now.Before(backoffEnd(q.cfg, q.backoff.items[0])) {
		q.toActiveLocked(heap.Pop(&q.backoff).(*QueuedPod), now)
	}
	// Timeouts are coarse (minutes): look at most once a second, not on
	// every 100ms flush, since it walks every unschedulable pod.
	if now.Sub(q.lastTimeout) < time.Second {
		return
	}
	q.lastTimeout = now
	for key, qp := range q.unschedulable {
		if now.Sub(qp.failedAt) >= q.cfg.UnschedulableTimeout {
			delete(q.unschedulable, key)
			q.requeueLocked(qp, now)
		}
	}
}

// Run flushes every 100ms until ctx ends, then closes the queue.
func (q *Queue) Run(ctx context.Context) error {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			q.Close()
			return nil
		case <-t.C:
			q.Flush()
		}
	}
}

// Close wakes Pop callers with ErrClosed.
func (q *Queue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Lengths are the number of pods in each place.
type Lengths struct {
	Active, Backoff, Unschedulable int
}

// Len counts the pods in each place (in-flight pods are in none).
func (q *Queue) Len() Lengths {
	q.mu.Lock()
	defer q.mu.Unlock()
	return Lengths{Active: q.active.Len(), Backoff: q.backoff.Len(), Unschedulable: len(q.unschedulable)}
}

// podHeap is a heap of queued pods ordered by less.
type podHeap struct {
	items []*QueuedPod
	less  func(a, b *QueuedPod) bool
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}
func (h *podHeap) Push(x any) {
	qp := x.(*QueuedPod)
	qp.index = len(h.items)
	h.items = append(h.items, qp)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	qp := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	return qp
}
