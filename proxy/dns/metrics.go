package dns

import (
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	queries        *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	upstreamErrors *prometheus.CounterVec
	durCluster     prometheus.Observer
	durForward     prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_proxy_dns_queries_total",
			Help: "DNS queries answered, by query type (A, AAAA, SRV, PTR, ... or other) and response code.",
		}, []string{"type", "rcode"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_proxy_dns_request_duration_seconds",
			Help:    "Time to answer a DNS query, by zone (cluster: answered from the Services; forward: sent upstream).",
			Buckets: prometheus.ExponentialBuckets(0.00005, 4, 10),
		}, []string{"zone"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_proxy_dns_upstream_errors_total",
			Help: "Forwarded queries an upstream failed to answer (timeout, refused), by upstream.",
		}, []string{"upstream"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.queries, m.duration, m.upstreamErrors} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	m.durCluster = m.duration.WithLabelValues("cluster")
	m.durForward = m.duration.WithLabelValues("forward")
	return m, nil
}

// typeLabel bounds the type label's values.
func typeLabel(t uint16) string {
	switch t {
	case dns.TypeA, dns.TypeAAAA, dns.TypeSRV, dns.TypePTR, dns.TypeCNAME, dns.TypeMX, dns.TypeTXT,
		dns.TypeNS, dns.TypeSOA, dns.TypeANY, dns.TypeHTTPS, dns.TypeSVCB:
		return dns.TypeToString[t]
	}
	return "other"
}

func (m *metrics) observe(r *dns.Msg, rcode int, zone string, d time.Duration) {
	t := "other"
	if len(r.Question) == 1 {
		t = typeLabel(r.Question[0].Qtype)
	}
	m.queries.WithLabelValues(t, dns.RcodeToString[rcode]).Inc()
	if zone == "cluster" {
		m.durCluster.Observe(d.Seconds())
	} else {
		m.durForward.Observe(d.Seconds())
	}
}
