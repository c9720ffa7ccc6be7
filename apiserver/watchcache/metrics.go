package watchcache

import "github.com/prometheus/client_golang/prometheus"

// Metrics are shared by every kind's cache.
type Metrics struct {
	Watchers     *prometheus.GaugeVec
	Events       *prometheus.CounterVec
	SlowWatchers *prometheus.CounterVec
}

// NewMetrics registers the watch cache collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Watchers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tugboat_apiserver_watchers",
			Help: "Open watches by kind.",
		}, []string{"kind"}),
		Events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_apiserver_watch_cache_events_total",
			Help: "Events received from etcd by kind.",
		}, []string{"kind"}),
		SlowWatchers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_apiserver_slow_watchers_closed_total",
			Help: "Watchers closed because they fell behind, by kind.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.Watchers, m.Events, m.SlowWatchers)
	return m
}
