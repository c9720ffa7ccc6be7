package storage

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the storage layer's collectors.
type Metrics struct {
	EtcdLatency *prometheus.HistogramVec
}

// NewMetrics registers the storage collectors with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		EtcdLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_apiserver_etcd_request_duration_seconds",
			Help:    "Latency of etcd requests by operation.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"operation"}),
	}
	reg.MustRegister(m.EtcdLatency)
	return m
}
