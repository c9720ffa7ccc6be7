package connlimit

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	conns   *prometheus.GaugeVec
	refuses *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tugboat_apiserver_connections",
			Help: "Connections open now, by listener.",
		}, []string{"listener"}),
		refuses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_apiserver_connections_refused_total",
			Help: "Connections closed at accept because a limit was reached, by listener and limit.",
		}, []string{"listener", "reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.conns, m.refuses)
	}
	return m
}

func (m *metrics) open(listener string, delta float64) { m.conns.WithLabelValues(listener).Add(delta) }

func (m *metrics) refused(listener, reason string) {
	m.refuses.WithLabelValues(listener, reason).Inc()
}
