// Package workqueue is the rate-limited, de-duplicating queue controllers
// pop keys from (client-go's workqueue, trimmed to what Tugboat uses).
//
// Contract: a key is never handed to two workers at once; a key added while
// it is being processed is queued again once Done is called; a key added
// many times before it is popped is popped once. AddRateLimited delays a key
// by its per-key exponential backoff (Forget resets it).
package workqueue

import (
	"container/heap"
	"sync"
	"time"
)

// Queue holds keys to process.
type Queue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	queue      []string
	dirty      map[string]bool
	processing map[string]bool
	failures   map[string]int
	delayed    delayHeap
	waiting    map[string]time.Time
	shutdown   bool
	timer      *time.Timer

	baseDelay, maxDelay time.Duration
}

// New makes a queue whose backoff starts at base and doubles up to max.
func New(base, max time.Duration) *Queue {
	if base <= 0 {
		base = 5 * time.Millisecond
	}
	if max <= 0 {
		max = 5 * time.Minute
	}
	q := &Queue{
		dirty: map[string]bool{}, processing: map[string]bool{}, failures: map[string]int{},
		waiting: map[string]time.Time{}, baseDelay: base, maxDelay: max,
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues key now.
func (q *Queue) Add(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue) addLocked(key string) {
	if q.shutdown || q.dirty[key] {
		return
	}
	q.dirty[key] = true
	if q.processing[key] {
		return
	}
	q.queue = append(q.queue, key)
	q.cond.Signal()
}

// AddAfter queues key after d (the earliest of several requests wins).
func (q *Queue) AddAfter(key string, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	at := time.Now().Add(d)
	if cur, ok := q.waiting[key]; ok && !at.Before(cur) {
		return
	}
	q.waiting[key] = at
	heap.Push(&q.delayed, delayed{key: key, at: at})
	q.armLocked()
}

// AddRateLimited queues key after its backoff, which doubles each time.
func (q *Queue) AddRateLimited(key string) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	q.mu.Unlock()
	d := q.baseDelay << min(n, 30)
	if d > q.maxDelay || d <= 0 {
		d = q.maxDelay
	}
	q.AddAfter(key, d)
}

// Forget resets key's backoff.
func (q *Queue) Forget(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// Failures is how many times key was rate-limited since the last Forget.
func (q *Queue) Failures(key string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

func (q *Queue) armLocked() {
	if len(q.delayed) == 0 {
		return
	}
	d := time.Until(q.delayed[0].at)
	if q.timer == nil {
		q.timer = time.AfterFunc(d, q.fire)
	} else {
		q.timer.Reset(d)
	}
}

func (q *Queue) fire() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	for len(q.delayed) > 0 && !q.delayed[0].at.After(now) {
		d := heap.Pop(&q.delayed).(delayed)
		if at, ok := q.waiting[d.key]; ok && at.Equal(d.at) {
			delete(q.waiting, d.key)
			q.addLocked(d.key)
		}
	}
	q.armLocked()
}

// Get blocks for the next key; shutdown is true once the queue is shut
// down and drained.
func (q *Queue) Get() (key string, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if len(q.queue) == 0 {
		return "", true
	}
	key, q.queue = q.queue[0], q.queue[1:]
	q.processing[key] = true
	delete(q.dirty, key)
	return key, false
}

// Done marks key processed; if it was added meanwhile it is queued again.
func (q *Queue) Done(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if q.dirty[key] {
		q.queue = append(q.queue, key)
		q.cond.Signal()
	}
}

// Len is the number of keys ready to pop.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// ShutDown wakes every Get; later Adds are ignored.
func (q *Queue) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	if q.timer != nil {
		q.timer.Stop()
	}
	q.cond.Broadcast()
}

type delayed struct {
	key string
	at  time.Time
}

type delayHeap []delayed

func (h delayHeap) Len() int           { return len(h) }
func (h delayHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h delayHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)        { *h = append(*h, x.(delayed)) }
func (h *delayHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
