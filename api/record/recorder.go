// Package record writes Events for every component through one recorder.
//
// Repeats are aggregated as Kubernetes does: an event with the same involved
// object, type, reason and message as one recorded earlier bumps that
// Event's count and lastTimestamp instead of creating a new object. Writes
// happen on a background goroutine through a bounded queue, so recording
// never blocks a control loop; when the queue is full the event is dropped
// and counted.
package record

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Event types.
const (
	Normal  = "Normal"
	Warning = "Warning"
)

// Recorder records events for one component.
type Recorder struct {
	events    *client.Typed[*v1.Event]
	component string
	host      string
	log       *slog.Logger
	queue     chan *v1.Event
	dropped   prometheus.Counter
	recorded  *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]*v1.Event // aggregation key -> last stored event
}

// New makes a recorder; call Run to start writing. reg may be nil.
func New(c *client.Client, component, host string, reg prometheus.Registerer, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.Default()
	}
	r := &Recorder{
		events: client.For[*v1.Event](c), component: component, host: host, log: log,
		queue: make(chan *v1.Event, 1000), seen: map[string]*v1.Event{},
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_events_dropped_total", Help: "Events dropped because the recorder queue was full.",
		}),
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_events_recorded_total", Help: "Events recorded by type and reason.",
		}, []string{"type", "reason"}),
	}
	if reg != nil {
		r.dropped = register(reg, r.dropped)
		r.recorded = register(reg, r.recorded)
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

// Eventf records an event about obj.
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
	select {
	case r.queue <- ev:
	default:
		r.dropped.Inc()
	}
}

// Run writes queued events until ctx ends.
func (r *Recorder) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-r.queue:
			r.write(ctx, ev)
		}
	}
}

func aggregationKey(ev *v1.Event) string {
	o := ev.InvolvedObject
	return strings.Join([]string{o.Kind, o.Namespace, o.Name, o.Uid, ev.Type, ev.Reason, ev.Message, ev.Source.Component}, "\x00")
}

func (r *Recorder) write(ctx context.Context, ev *v1.Event) {
	key := aggregationKey(ev)
	r.mu.Lock()
	prev := r.seen[key]
	r.mu.Unlock()
	if prev != nil {
		out, err := r.events.Mutate(ctx, prev.Metadata.Namespace, prev.Metadata.Name, false, func(e *v1.Event) error {
			e.Count++
			e.LastTimestamp = ev.LastTimestamp
			return nil
		})
		if err == nil {
			r.remember(key, out)
			return
		}
		// The event may have expired: create it again below.
	}
	name := ev.InvolvedObject.Name
	if len(name) > 200 {
		name = name[:200]
	}
	ev.Metadata.Name = fmt.Sprintf("%s.%x", strings.ToLower(strings.ReplaceAll(name, "_", "-")), time.Now().UnixNano())
	out, err := r.events.Create(ctx, ev)
	if err != nil {
		r.log.Debug("recording event failed", "reason", ev.Reason, "object", ev.InvolvedObject.Name, "err", err)
		return
	}
	r.remember(key, out)
}

func (r *Recorder) remember(key string, ev *v1.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) > 4096 {
		r.seen = map[string]*v1.Event{}
	}
	r.seen[key] = ev
}
