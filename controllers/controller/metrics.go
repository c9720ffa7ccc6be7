package controller

import (
	"errors"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/workqueue"
)

// Metrics are the skeleton's metrics, shared by every controller of one
// controller-manager and labelled by controller name.
type Metrics struct {
	syncDuration *prometheus.HistogramVec
	syncErrors   *prometheus.CounterVec
	depth        *depthCollector
}

// NewMetrics registers the skeleton's metrics on reg (nil: unregistered).
// Registering twice on one registry returns the metrics already there.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_controller_manager_sync_duration_seconds",
			Help:    "Time one Sync of one key took, by controller.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"controller"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_sync_errors_total",
			Help: "Syncs that failed, by controller and type (retry: requeued with backoff; permanent: dropped).",
		}, []string{"controller", "type"}),
		depth: &depthCollector{queues: map[string]*workqueue.Queue{}, desc: prometheus.NewDesc(
			"tugboat_controller_manager_queue_depth",
			"Keys waiting in a controller's work queue.", []string{"controller"}, nil)},
	}
	if reg != nil {
		m.syncDuration = Register(reg, m.syncDuration)
		m.syncErrors = Register(reg, m.syncErrors)
		m.depth = Register(reg, m.depth)
	}
	return m
}

func (m *Metrics) syncError(controller, typ string) {
	if m != nil {
		m.syncErrors.WithLabelValues(controller, typ).Inc()
	}
}

func (m *Metrics) watchQueue(name string, q *workqueue.Queue) {
	m.depth.mu.Lock()
	defer m.depth.mu.Unlock()
	m.depth.queues[name] = q
}

// depthCollector reads each queue's length at scrape time.
type depthCollector struct {
	desc   *prometheus.Desc
	mu     sync.Mutex
	queues map[string]*workqueue.Queue
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, q := range d.queues {
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(q.Len()), name)
	}
}

// Register registers c on reg, or returns the collector already registered
// under the same description, so a component that builds its controllers
// again (a new leadership term, a test) keeps one set of series.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err) // two different metrics under one name: a programming error
	}
	return c
}
