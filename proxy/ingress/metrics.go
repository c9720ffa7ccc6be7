package ingress

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests       *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	rebuilds       prometheus.Counter
	served         prometheus.Gauge
	leader         prometheus.Gauge
	events         *prometheus.CounterVec

	per sync.Map // [2]string{namespace, name} -> *ingressMetrics
}

// ingressMetrics are one Ingress's series, looked up once per Ingress, not
// per request.
type ingressMetrics struct {
	ns, name       string
	requests       *prometheus.CounterVec
	ok             prometheus.Counter // code 200, the common one
	upstreamErrors prometheus.Counter
	duration       prometheus.Observer
}

// request counts one answer with code.
func (im *ingressMetrics) request(code int) {
	if code == 200 {
		im.ok.Inc()
		return
	}
	im.requests.WithLabelValues(im.ns, im.name, strconv.Itoa(code)).Inc()
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tugboat_proxy_ingress_requests_total",
			Help: "HTTP requests served by the Ingress datapath, by Ingress (empty: matched none) and status code."}, []string{"namespace", "ingress", "code"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tugboat_proxy_ingress_upstream_errors_total",
			Help: "Requests whose endpoint could not be reached or failed before answering (502), by Ingress."}, []string{"namespace", "ingress"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tugboat_proxy_ingress_request_duration_seconds",
			Help:    "Time from a request's arrival to its response's end, by Ingress.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}, []string{"namespace", "ingress"}),
		rebuilds: prometheus.NewCounter(prometheus.CounterOpts{Name: "tugboat_proxy_ingress_table_rebuilds_total",
			Help: "Routing tables built and swapped in."}),
		served: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tugboat_proxy_ingress_served", Help: "Ingresses served by this proxy."}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tugboat_proxy_ingress_status_leader",
			Help: "1 while this proxy holds the Lease kube-system/tugboat-ingress-status and writes the Ingresses' status and Events."}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tugboat_proxy_ingress_events_total",
			Help: "Events this proxy recorded on Ingresses (only the status Lease holder records), by reason."}, []string{"reason"}),
	}
	reg.MustRegister(m.requests, m.upstreamErrors, m.duration, m.rebuilds, m.served, m.leader, m.events)
	return m
}

// of returns the Ingress's series (ns and name "": requests that matched
// none); a lookup without a lock or an allocation once made.
func (m *metrics) of(ns, name string) *ingressMetrics {
	key := [2]string{ns, name}
	if im, ok := m.per.Load(key); ok {
		return im.(*ingressMetrics)
	}
	im, _ := m.per.LoadOrStore(key, &ingressMetrics{ns: ns, name: name, requests: m.requests, ok: m.requests.WithLabelValues(ns, name, "200"),
		upstreamErrors: m.upstreamErrors.WithLabelValues(ns, name), duration: m.duration.WithLabelValues(ns, name)})
	return im.(*ingressMetrics)
}
