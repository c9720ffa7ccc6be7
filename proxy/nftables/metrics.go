package nftables

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	latency      prometheus.Histogram
	syncDuration *prometheus.HistogramVec
	syncErrors   *prometheus.CounterVec
	servicePorts prometheus.Gauge
	endpoints    prometheus.Gauge
	rejecting    prometheus.Gauge
	lastSync     prometheus.Gauge
	staleFlows   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tugboat_proxy_programming_latency_seconds",
			Help:    "Time from a Service or Endpoints change seen by the proxy to its rules being live in the kernel.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tugboat_proxy_sync_duration_seconds",
			Help:    "Time one sync of the nftables table took, by mode (full: the table rebuilt; partial: changed Services).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"mode"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_proxy_sync_errors_total",
			Help: "Syncs of the nftables table that failed (and were retried as full syncs), by mode.",
		}, []string{"mode"}),
		servicePorts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_proxy_service_ports",
			Help: "Service ports programmed (with or without ready endpoints).",
		}),
		endpoints: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_proxy_endpoints",
			Help: "Endpoints programmed, summed over service ports.",
		}),
		rejecting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_proxy_service_ports_without_endpoints",
			Help: "Service ports programmed with no ready endpoint: their connections are refused.",
		}),
		lastSync: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_proxy_last_sync_timestamp_seconds",
			Help: "Unix time of the last successful sync of the nftables table.",
		}),
		staleFlows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_proxy_stale_udp_flows_deleted_total",
			Help: "Conntrack entries of UDP flows to removed endpoints that were deleted.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.latency, m.syncDuration, m.syncErrors, m.servicePorts, m.endpoints, m.rejecting, m.lastSync, m.staleFlows} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
