package network

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the network manager's collectors.
type metrics struct {
	cniDuration   *prometheus.HistogramVec
	cniErrors     *prometheus.CounterVec
	netnsDuration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		cniDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_kubelet_cni_duration_seconds",
			Help:    "Latency of CNI operations (add, del, status) on pod networks.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"operation"}),
		cniErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_cni_errors_total",
			Help: "CNI operations that failed, by operation.",
		}, []string{"operation"}),
		netnsDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_kubelet_netns_duration_seconds",
			Help:    "Latency of creating and deleting pod network namespaces.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25},
		}, []string{"operation"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.cniDuration, m.cniErrors, m.netnsDuration} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// observeCNI records one CNI operation that started at start.
func (m *metrics) observeCNI(op string, start time.Time, err error) {
	m.cniDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil {
		m.cniErrors.WithLabelValues(op).Inc()
	}
}
