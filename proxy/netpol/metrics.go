package netpol

import (
	"errors"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	syncDuration *prometheus.HistogramVec
	syncErrors   *prometheus.CounterVec
	latency      prometheus.Histogram
	isolated     *prometheus.GaugeVec
}

var dropsDesc = prometheus.NewDesc("tugboat_proxy_network_policy_drops_total",
	"New connections of this node's pods dropped because no rule of the policies isolating the pod allowed them, per policy "+
		"(a drop for a pod that several policies isolate counts for each); reset when the table is recreated.",
	[]string{"direction", "namespace", "policy"}, nil)

func newMetrics(reg prometheus.Registerer, a *Agent) (*metrics, error) {
	m := &metrics{
		syncDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tugboat_proxy_network_policy_sync_duration_seconds",
			Help: "One sync of the network policy table (full: recreated; partial: the difference).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)},
			[]string{"mode"}),
		syncErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tugboat_proxy_network_policy_sync_errors_total",
			Help: "Failed syncs of the network policy table (retried as full syncs)."}, []string{"mode"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "tugboat_proxy_network_policy_programming_latency_seconds",
			Help: "A pod, namespace or policy change seen by the proxy -> the node's policy rules committed in the kernel.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		isolated: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tugboat_proxy_network_policy_isolated_pods",
			Help: "This node's pods isolated by some policy, per direction."}, []string{"direction"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.syncDuration, m.syncErrors, m.latency, m.isolated, dropCollector{a}} {
		if err := reg.Register(c); err != nil {
			return nil, errors.Join(errors.New("network policy metrics"), err)
		}
	}
	return m, nil
}

// dropCollector reads the drop rules' counters from the kernel at scrape.
type dropCollector struct{ a *Agent }

func (d dropCollector) Describe(ch chan<- *prometheus.Desc) { ch <- dropsDesc }

func (d dropCollector) Collect(ch chan<- prometheus.Metric) {
	d.a.appliedMu.Lock()
	rs := d.a.applied
	d.a.appliedMu.Unlock()
	if rs == nil {
		return
	}
	var chains []string
	for c := range rs.Isolating {
		chains = append(chains, c)
	}
	counts, err := d.a.tbl.drops(chains)
	if err != nil {
		d.a.log.Warn("reading the network policy drop counters", "err", err)
		return
	}
	type key struct{ dir, ns, name string }
	sum := map[key]uint64{}
	for c, n := range counts {
		dir := "ingress"
		if strings.HasPrefix(c, "pod-out/") {
			dir = "egress"
		}
		for _, p := range rs.Isolating[c] {
			ns, name, _ := strings.Cut(p, "/")
			sum[key{dir, ns, name}] += n
		}
	}
	for k, n := range sum {
		ch <- prometheus.MustNewConstMetric(dropsDesc, prometheus.CounterValue, float64(n), k.dir, k.ns, k.name)
	}
}
