// Package podautoscaler is the HorizontalPodAutoscaler controller
// (autoscaling/v2): every SyncPeriod it measures each autoscaler's pods
// and sets its target's replicas.
//
// Loop (on the controller skeleton, each key requeued every SyncPeriod):
// read the target through its kind's scale (kinds.Kind.Scale: replicas and
// selector of a Deployment, ReplicaSet or StatefulSet); ask the kubelets
// of the nodes running the selected pods for their usage through the
// apiserver's node relay (NodeAPI.Stats, what `tugctl top` shows: the
// controller-manager never dials a kubelet); for each Resource metric
// compute usage against the target (Utilization: percent of the pods'
// requests; AverageValue: per pod) and the replicas that would meet it,
// ceil(ratio × measured pods), unchanged within a 10% tolerance; take the
// largest. The recommendation is then stabilized (the highest of the
// scale-down window, the lowest of the scale-up window), limited by the
// behavior's policies (Pods/Percent per period, from the replicas at the
// start of the period, selectPolicy Max/Min/Disabled) and by
// min/maxReplicas, and written to the target's replicas.
//
// Conditions: AbleToScale (SucceededRescale, ReadyForNewScale,
// FailedGetScale, FailedUpdateScale), ScalingActive (ValidMetricFound,
// FailedGetResourceMetric, ScalingDisabled), ScalingLimited
// (TooManyReplicas, TooFewReplicas, ScaleUpLimit, ScaleDownLimit,
// DesiredWithinRange). Events: SuccessfulRescale, FailedRescale,
// FailedGetScale, FailedGetResourceMetric. Metrics:
// tugboat_controller_manager_hpa_rescales_total{direction}.
//
// The recommendations and scale events the windows look at are kept in
// memory, as Kubernetes keeps them: a new leader starts with empty windows.
package podautoscaler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Config tunes the controller.
type Config struct {
	// SyncPeriod is how often each autoscaler is evaluated
	// (--horizontal-pod-autoscaler-sync-period, default 15s).
	SyncPeriod time.Duration
	// Tolerance is the relative change of a metric ignored (default 0.1).
	Tolerance float64
	// Workers (default 5).
	Workers int
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.SyncPeriod < 0 {
		return fmt.Errorf("--horizontal-pod-autoscaler-sync-period: must be > 0, got %s", c.SyncPeriod)
	}
	if c.Tolerance < 0 || c.Tolerance >= 1 {
		return fmt.Errorf("--horizontal-pod-autoscaler-tolerance: must be in [0, 1), got %v", c.Tolerance)
	}
	if c.Workers < 0 {
		return fmt.Errorf("horizontal pod autoscaler Workers: must be >= 0")
	}
	return nil
}

// Controller is the HorizontalPodAutoscaler controller.
type Controller struct {
	cfg      Config
	c        *client.Client
	hpaAPI   *client.Typed[*v1.HorizontalPodAutoscaler]
	hpas     controller.Source[*v1.HorizontalPodAutoscaler]
	pods     controller.Source[*v1.Pod]
	stats    v1.NodeAPIClient
	events   controller.Recorder
	loop     *controller.Controller
	log      *slog.Logger
	now      func() time.Time
	rescales *prometheus.CounterVec

	mu      sync.Mutex
	history map[string]*history // by autoscaler key
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.SyncPeriod == 0 {
		cfg.SyncPeriod = 15 * time.Second
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = 0.1
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{cfg: cfg, c: d.Client, hpaAPI: client.For[*v1.HorizontalPodAutoscaler](d.Client),
		hpas: controller.For[*v1.HorizontalPodAutoscaler](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		stats: v1.NewNodeAPIClient(d.Client.Conn()), events: d.Recorder, log: log.With("controller", "horizontalpodautoscaler"),
		now: time.Now, history: map[string]*history{},
		rescales: controller.Register(d.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_hpa_rescales_total", Help: "Replica changes made by autoscalers, by direction (up, down)."},
			[]string{"direction"})),
	}
	c.loop = controller.New(controller.Config{Name: "horizontalpodautoscaler", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics,
		Logger: log, Synced: []func() bool{c.hpas.HasSynced, c.pods.HasSynced}})
	c.pods.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Pod])
	c.hpas.AddHandler(informer.Handler[*v1.HorizontalPodAutoscaler]{
		OnAdd: func(h *v1.HorizontalPodAutoscaler) { c.loop.EnqueueObject(h) },
		OnUpdate: func(old, h *v1.HorizontalPodAutoscaler) {
			if old.GetMetadata().GetGeneration() != h.GetMetadata().GetGeneration() {
				c.loop.EnqueueObject(h)
			}
		},
		OnDelete: func(h *v1.HorizontalPodAutoscaler) {
			c.mu.Lock()
			delete(c.history, v1.Key(h))
			c.mu.Unlock()
		},
	})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }
