package pod

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	workers           prometheus.Gauge
	runningPods       prometheus.Gauge
	runningContainers prometheus.Gauge
	syncDuration      prometheus.Histogram
	podStart          prometheus.Histogram
	restarts          prometheus.Counter
	imagePulls        *prometheus.CounterVec
	orphans           prometheus.Counter
	evictions         prometheus.Counter
	// lifecycleHTTPFallbacks counts HTTPS lifecycle hooks answered in
	// plain HTTP and sent again over HTTP successfully.
	lifecycleHTTPFallbacks prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		workers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_kubelet_pod_workers",
			Help: "Pods this kubelet is running or terminating.",
		}),
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_kubelet_running_pods",
			Help: "Pods with at least one running container.",
		}),
		runningContainers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tugboat_kubelet_running_containers",
			Help: "Running containers.",
		}),
		syncDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tugboat_kubelet_pod_sync_duration_seconds",
			Help:    "Duration of one pod worker sync.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		podStart: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tugboat_kubelet_pod_start_duration_seconds",
			Help:    "Time from the kubelet first seeing a pod to all its containers running.",
			Buckets: []float64{.1, .2, .3, .4, .5, .75, 1, 2, 5, 10, 30, 60},
		}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_kubelet_container_restarts_total",
			Help: "Containers restarted (restart policy, liveness or startup probe).",
		}),
		imagePulls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_image_pulls_total",
			Help: "Image pulls from registries by result.",
		}, []string{"result"}),
		orphans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_kubelet_orphans_removed_total",
			Help: "Sandboxes, containers, network namespaces and pod directories removed because their pod is gone.",
		}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_kubelet_evictions_total",
			Help: "Pods evicted (phase Failed, reason Evicted) to reclaim memory or disk the node was short of.",
		}),
		lifecycleHTTPFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_kubelet_lifecycle_handler_http_fallbacks_total",
			Help: "The number of times lifecycle handlers successfully fell back to http from https.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.workers, m.runningPods, m.runningContainers, m.syncDuration, m.podStart, m.restarts, m.imagePulls, m.orphans, m.evictions, m.lifecycleHTTPFallbacks} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
