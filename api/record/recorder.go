// Package record writes Events for every component through one recorder.
//
// Recording never blocks the caller's loop and keeps up with a burst: an
// event goes into one of Shards pending queues (WithWriters sets another
// number; chosen by its aggregation key), each written by a goroutine of
// its own while it holds events, so that many writes are in flight at once over the client's connection while
// the events of one key stay in order. A queue's writer ends when the
// queue is empty and the next event starts another: an idle recorder has
// no goroutine (a process of a thousand hollow kubelets had 16 idle
// writers per node, 30% of its goroutines). Repeats are aggregated as Kubernetes does: an event with the
// same involved object, type, reason, message and source as one recorded
// earlier bumps that Event's count and lastTimestamp instead of creating
// a new object — and a repeat of an event still waiting in its queue only
// bumps the waiting one, so a storm of repeats costs one write. The
// queues hold at most MaxPending distinct events in all; beyond that an
// event is dropped and counted (tugboat_events_dropped_total), which is
// the recorder's only back-pressure.
//
// The loop of a shard's writer: take the oldest pending key, write it
// (update the stored Event this recorder made for the key, with one
// Update on the version it remembers, or create a new one), remember what
// was stored, repeat; end when empty. Events recorded before Run, or
// after its context ends, wait for a Run.
package record

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Event types.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

const (
	// Shards is the default number of queues, and of writes in flight at
	// once.
	Shards = 16
	// MaxPending bounds the events waiting to be written, in all queues.
	MaxPending = 20000
	// maxSeen bounds the remembered stored Events, per shard.
	maxSeen = 4096
)

// Recorder records events for one component.
type Recorder struct {
	events    *client.Typed[*v1.Event]
	component string
	host      string
	log       *slog.Logger
	dropped   prometheus.Counter
	recorded  *prometheus.CounterVec
	pendingG  prometheus.Gauge
	unwritten atomic.Int64 // queued or being written
	shards    []*shard

	// runMu guards runCtx, Run's context while it runs (nil otherwise),
	// and writers' Add: no writer starts once Run waits for them.
	runMu   sync.Mutex
	runCtx  context.Context
	writers sync.WaitGroup
}

// shard is one queue of pending events and what its writer stored.
type shard struct {
	mu      sync.Mutex
	pending map[string]*v1.Event // aggregation key -> event to write
	order   []string             // pending keys, oldest first
	seen    map[string]*v1.Event // aggregation key -> last stored event
	writing bool                 // a writer runs for this shard
}

// Option changes a recorder made by New.
type Option func(*Recorder)

// WithWriters sets the number of queues, and so of writes in flight at
// once (Shards by default; n < 1 keeps the default). MaxPending is shared
// by all of them.
func WithWriters(n int) Option {
	return func(r *Recorder) {
		if n >= 1 {
			r.shards = make([]*shard, n)
		}
	}
}

// New makes a recorder; call Run to start writing. reg may be nil.
func New(c *client.Client, component, host string, reg prometheus.Registerer, log *slog.Logger, opts ...Option) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	r := &Recorder{
		events: client.For[*v1.Event](c), component: component, host: host, log: log,
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_events_dropped_total", Help: "Events dropped because the recorder's queues held MaxPending events.",
		}),
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_events_recorded_total", Help: "Events recorded by type and reason.",
		}, []string{"type", "reason"}),
		pendingG: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_events_pending", Help: "Events waiting in the recorder's queues.",
		}),
	}
	r.shards = make([]*shard, Shards)
	for _, o := range opts {
		o(r)
	}
	for i := range r.shards {
		r.shards[i] = &shard{pending: map[string]*v1.Event{}, seen: map[string]*v1.Event{}}
	}
	if reg != nil {
		r.dropped = register(reg, r.dropped)
		r.recorded = register(reg, r.recorded)
		r.pendingG = register(reg, r.pendingG)
	}
	return r
}

// register adds c to reg, or returns the collector already registered
// under the same name (several recorders may share one registry).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

// Eventf records an event about obj. It never blocks on the API.
func (r *Recorder) Eventf(obj v1.Object, typ, reason, format string, args ...any) {
	m := obj.GetMetadata()
	kindName := ""
	if k, err := kinds.ForMessage(obj); err == nil {
		kindName = k.Name
	}
	ns := m.GetNamespace()
	if ns == "" {
		ns = "default"
	}
	now := timestamppb.Now()
	ev := &v1.Event{
		Metadata: &v1.ObjectMeta{Namespace: ns},
		InvolvedObject: &v1.ObjectReference{
			Kind: kindName, Namespace: m.GetNamespace(), Name: m.GetName(), Uid: m.GetUid(), ResourceVersion: m.GetResourceVersion(),
		},
		Reason: reason, Message: fmt.Sprintf(format, args...), Type: typ,
		Source:         &v1.EventSource{Component: r.component, Host: r.host},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingComponent: r.component, ReportingInstance: r.host,
	}
	r.recorded.WithLabelValues(typ, reason).Inc()
	r.enqueue(ev)
}

func (r *Recorder) enqueue(ev *v1.Event) {
	key := aggregationKey(ev)
	s := r.shardOf(key)
	s.mu.Lock()
	if p := s.pending[key]; p != nil {
		p.Count++
		p.LastTimestamp = ev.LastTimestamp
		s.mu.Unlock()
		return
	}
	if len(s.pending) >= max(MaxPending/len(r.shards), 1) {
		s.mu.Unlock()
		r.dropped.Inc()
		return
	}
	s.pending[key] = ev
	s.order = append(s.order, key)
	s.mu.Unlock()
	r.unwritten.Add(1)
	r.pendingG.Inc()
	r.startWriter(s)
}

// startWriter starts s's writer unless one runs or Run does not.
func (r *Recorder) startWriter(s *shard) {
	r.runMu.Lock()
	defer r.runMu.Unlock()
	ctx := r.runCtx
	if ctx == nil {
		return
	}
	s.mu.Lock()
	start := !s.writing && len(s.order) > 0
	s.writing = s.writing || start
	s.mu.Unlock()
	if start {
		r.writers.Add(1)
		go func() { defer r.writers.Done(); r.runShard(ctx, s) }()
	}
}

func (r *Recorder) shardOf(key string) *shard {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return r.shards[h.Sum32()%uint32(len(r.shards))]
}

// Dropped counts the events dropped because the queues were full.
func (r *Recorder) Dropped() prometheus.Counter { return r.dropped }

// Pending is the number of events queued or being written.
func (r *Recorder) Pending() int { return int(r.unwritten.Load()) }

// Run writes queued events until ctx ends, and returns once the writers
// have stopped. One Run at a time.
func (r *Recorder) Run(ctx context.Context) {
	r.runMu.Lock()
	r.runCtx = ctx
	r.runMu.Unlock()
	for _, s := range r.shards {
		r.startWriter(s) // what was recorded before Run
	}
	<-ctx.Done()
	r.runMu.Lock()
	r.runCtx = nil
	r.runMu.Unlock()
	r.writers.Wait()
}

// runShard writes s's events until it is empty or ctx ends.
func (r *Recorder) runShard(ctx context.Context, s *shard) {
	for {
		s.mu.Lock()
		if len(s.order) == 0 || ctx.Err() != nil {
			if len(s.order) == 0 {
				s.order = nil // let the backing array go after a burst
			}
			s.writing = false
			s.mu.Unlock()
			return
		}
		var key string
		key, s.order = s.order[0], s.order[1:]
		ev := s.pending[key]
		delete(s.pending, key)
		s.mu.Unlock()
		r.write(ctx, s, key, ev)
		r.unwritten.Add(-1)
		r.pendingG.Dec()
	}
}

func aggregationKey(ev *v1.Event) string {
	o := ev.InvolvedObject
	return strings.Join([]string{o.Kind, o.Namespace, o.Name, o.Uid, ev.Type, ev.Reason, ev.Message, ev.Source.Component}, "\x00")
}

// write stores ev: as more occurrences of the Event this shard stored for
// key, or as a new Event.
func (r *Recorder) write(ctx context.Context, s *shard, key string, ev *v1.Event) {
	s.mu.Lock()
	prev := s.seen[key]
	s.mu.Unlock()
	if prev != nil {
		next := proto.Clone(prev).(*v1.Event)
		next.Count += ev.Count
		next.LastTimestamp = ev.LastTimestamp
		out, err := r.events.Update(ctx, next)
		if apierrors.IsConflict(err) {
			// Someone else changed it: add to what is stored now.
			out, err = r.events.Mutate(ctx, prev.Metadata.Namespace, prev.Metadata.Name, false, func(e *v1.Event) error {
				e.Count += ev.Count
				e.LastTimestamp = ev.LastTimestamp
				return nil
			})
		}
		if err == nil {
			s.remember(key, out)
			return
		}
		// The event may have expired: create it again below.
	}
	name := ev.InvolvedObject.Name
	if len(name) > 200 {
		name = name[:200]
	}
	base := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
	var out *v1.Event
	var err error
	for range 3 { // a name is the time in ns: shards writing at once may meet
		ev.Metadata.Name = fmt.Sprintf("%s.%x", base, time.Now().UnixNano())
		if out, err = r.events.Create(ctx, ev); !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	if err != nil {
		r.log.Debug("recording event failed", "reason", ev.Reason, "object", ev.InvolvedObject.Name, "err", err)
		return
	}
	s.remember(key, out)
}

func (s *shard) remember(key string, ev *v1.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) >= maxSeen {
		s.seen = map[string]*v1.Event{}
	}
	s.seen[key] = ev
}
