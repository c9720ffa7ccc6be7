package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/scheduler/cache"
	"github.com/tugboat/tugboat/scheduler/queue"
)

// metrics are the scheduler's Prometheus metrics.
type metrics struct {
	// attempts counts scheduling attempts by result: scheduled (bound),
	// unschedulable (no node fits) or error (assume or bind failed).
	attempts *prometheus.CounterVec
	// binds counts bind calls by result: ok, conflict (already bound or
	// being deleted) or error.
	binds *prometheus.CounterVec
	// decision is the time from taking a pod off the queue to a decision
	// (snapshot, filter, score, assume): the scheduler's own work.
	decision prometheus.Histogram
	// e2e is the time from a pod entering the queue to its bind succeeding.
	e2e prometheus.Histogram
	// bind is the latency of the Bind call.
	bind     prometheus.Histogram
	inFlight prometheus.Gauge
	leader   prometheus.Gauge
	// preemptions counts pods for which victims were deleted.
	preemptions prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, q *queue.Queue, c *cache.Cache) *metrics {
	m := &metrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_scheduler_schedule_attempts_total",
			Help: "Scheduling attempts by result: scheduled, unschedulable or error.",
		}, []string{"result"}),
		binds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_scheduler_binds_total",
			Help: "Bind calls by result: ok, conflict (already bound or being deleted) or error.",
		}, []string{"result"}),
		decision: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tugboat_scheduler_decision_duration_seconds",
			Help:    "Time to decide for one pod: snapshot update, filter, score and assume.",
			Buckets: prometheus.ExponentialBucketsRange(10e-6, 1, 50),
		}),
		e2e: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tugboat_scheduler_e2e_scheduling_duration_seconds",
			Help:    "Time from a pod entering the scheduling queue to its successful bind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
		}),
		bind: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tugboat_scheduler_bind_duration_seconds",
			Help:    "Latency of Bind calls to the apiserver.",
			Buckets: prometheus.ExponentialBucketsRange(100e-6, 10, 40),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_scheduler_binds_in_flight", Help: "Bind calls in flight.",
		}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_scheduler_leader", Help: "1 while this replica is the active scheduler.",
		}),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_scheduler_preemptions_total", Help: "Pods for which lower-priority pods were preempted.",
		}),
	}
	for _, r := range []string{"scheduled", "unschedulable", "error"} {
		m.attempts.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "conflict", "error"} {
		m.binds.WithLabelValues(r)
	}
	reg.MustRegister(m.attempts, m.binds, m.decision, m.e2e, m.bind, m.inFlight, m.leader, m.preemptions)
	pending := func(where string, f func(queue.Lengths) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tugboat_scheduler_pending_pods", Help: "Pods waiting in the scheduling queue, by sub-queue.",
			ConstLabels: prometheus.Labels{"queue": where},
		}, func() float64 { return float64(f(q.Len())) })
	}
	cached := func(what string, f func(cache.Stats) int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tugboat_scheduler_cache_" + what, Help: "Objects in the scheduler's cache: " + what + ".",
		}, func() float64 { return float64(f(c.Stats())) })
	}
	reg.MustRegister(
		pending("active", func(l queue.Lengths) int { return l.Active }),
		pending("backoff", func(l queue.Lengths) int { return l.Backoff }),
		pending("unschedulable", func(l queue.Lengths) int { return l.Unschedulable }),
		cached("nodes", func(s cache.Stats) int { return s.Nodes }),
		cached("pods", func(s cache.Stats) int { return s.Pods }),
		cached("assumed_pods", func(s cache.Stats) int { return s.Assumed }),
	)
	return m
}
