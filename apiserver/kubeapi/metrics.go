package kubeapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of the HTTP door (the gRPC door's are tugboat_apiserver_grpc_*).
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	watches  *prometheus.GaugeVec
}

// Register adds the door's metrics to reg.
func (h *Handler) Register(reg prometheus.Registerer) {
	h.metrics = &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tugboat_apiserver_http_requests_total",
			Help: "Requests to the Kubernetes HTTP API by method and code."}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tugboat_apiserver_http_request_duration_seconds",
			Help: "Time to answer a Kubernetes HTTP API request (watches excluded).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"method"}),
		watches: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tugboat_apiserver_http_watches",
			Help: "Open watches on the Kubernetes HTTP API by resource."}, []string{"resource"}),
	}
	reg.MustRegister(h.metrics.requests, h.metrics.latency, h.metrics.watches)
}

func (h *Handler) observe(r *http.Request, code int, start time.Time) {
	if h.metrics == nil {
		return
	}
	h.metrics.requests.WithLabelValues(r.Method, strconv.Itoa(code)).Inc()
	if !isWatch(r) {
		h.metrics.latency.WithLabelValues(r.Method).Observe(time.Since(start).Seconds())
	}
}

// watchStarted counts an open watch until the returned func is called.
func (m *metrics) watchStarted(resource string) func() {
	if m == nil {
		return func() {}
	}
	g := m.watches.WithLabelValues(resource)
	g.Inc()
	return g.Dec
}
