// Package job is the Job controller (batch/v1): it runs each Job's pods
// until spec.completions of them succeeded, or the Job failed.
//
// Loop (on the controller skeleton): Job and Pod events enqueue the Job's
// key; Sync claims the pods matching the Job's selector (controlling
// ownerReferences), counts the finished ones exactly once (below), decides
// whether the Job completed (Complete) or failed (Failed: reason
// BackoffLimitExceeded, DeadlineExceeded or PodFailurePolicy), and
// otherwise keeps min(parallelism, completions - succeeded) pods active:
// new pods in slow-start batches after an exponential back-off from the
// last failure (PodBackoff doubling per failure, up to PodBackoffMax),
// extra ones deleted newest first. Indexed Jobs give each pod an index
// (annotation and label batch.kubernetes.io/job-completion-index, env
// JOB_COMPLETION_INDEX, hostname <job>-<index>) and complete when every
// index 0..completions-1 succeeded once. A suspended Job deletes its
// active pods and creates none. A finished Job with
// ttlSecondsAfterFinished is deleted (foreground) that long after it
// finished.
//
// Counting contract (Kubernetes' job tracking with finalizers): every pod
// is created with the finalizer batch.kubernetes.io/job-tracking, so it
// cannot vanish before it is counted. A finished pod (or one being
// deleted) is first recorded in status.uncountedTerminatedPods, then its
// finalizer is removed, then it moves from that list into
// status.succeeded/failed: a crash between any two steps neither loses
// nor double-counts a pod. Pods whose Job is gone lose the finalizer.
//
// Events: SuccessfulCreate, FailedCreate, SuccessfulDelete, Completed,
// BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy, Suspended,
// Resumed. Metrics: tugboat_controller_manager_jobs_finished_total{condition,reason}.
package job

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// The pod finalizer, label and annotation Kubernetes uses.
const (
	TrackingFinalizer = "batch.kubernetes.io/job-tracking"
	IndexAnnotation   = "batch.kubernetes.io/job-completion-index"
	IndexLabel        = "batch.kubernetes.io/job-completion-index"
	IndexEnv          = "JOB_COMPLETION_INDEX"
)

// Condition reasons.
const (
	ReasonBackoffLimitExceeded = "BackoffLimitExceeded"
	ReasonDeadlineExceeded     = "DeadlineExceeded"
	ReasonPodFailurePolicy     = "PodFailurePolicy"
	ReasonCompleted            = "Completed"
)

// Config tunes the controller.
type Config struct {
	// Workers is how many Jobs sync at once (--concurrent-job-syncs, default 5).
	Workers int
	// PodBackoff is the delay before a failed pod is replaced, doubled for
	// every further failure (default 10s, as Kubernetes).
	PodBackoff time.Duration
	// PodBackoffMax caps it (default 6m).
	PodBackoffMax time.Duration
	// BurstPods caps the pods one sync creates (default 500).
	BurstPods int
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	switch {
	case c.Workers < 0:
		return fmt.Errorf("--concurrent-job-syncs: must be >= 0, got %d", c.Workers)
	case c.PodBackoff < 0:
		return fmt.Errorf("--job-pod-backoff: must be >= 0, got %s", c.PodBackoff)
	case c.PodBackoffMax < 0:
		return fmt.Errorf("--job-pod-backoff-max: must be >= 0, got %s", c.PodBackoffMax)
	case c.BurstPods < 0:
		return fmt.Errorf("job BurstPods: must be >= 0, got %d", c.BurstPods)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Workers == 0 {
		c.Workers = 5
	}
	if c.PodBackoff == 0 {
		c.PodBackoff = 10 * time.Second
	}
	if c.PodBackoffMax == 0 {
		c.PodBackoffMax = 6 * time.Minute
	}
	if c.BurstPods == 0 {
		c.BurstPods = 500
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Controller is the Job controller.
type Controller struct {
	cfg      Config
	jobAPI   *client.Typed[*v1.Job]
	podAPI   *client.Typed[*v1.Pod]
	jobs     controller.Source[*v1.Job]
	pods     controller.Source[*v1.Pod]
	owners   controller.Owners[*v1.Job]
	exp      *controller.Expectations
	removing *removals
	events   controller.Recorder
	loop     *controller.Controller
	log      *slog.Logger
	finished *prometheus.CounterVec
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		cfg: cfg, jobAPI: client.For[*v1.Job](d.Client), podAPI: client.For[*v1.Pod](d.Client),
		jobs: controller.For[*v1.Job](d.Informers), pods: controller.For[*v1.Pod](d.Informers),
		exp: controller.NewExpectations(0), removing: newRemovals(), events: d.Recorder, log: log.With("controller", "job"),
		finished: controller.Register(d.Registry, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_jobs_finished_total",
			Help: "Jobs that finished, by condition (Complete, Failed) and reason.",
		}, []string{"condition", "reason"})),
	}
	c.owners = controller.Owners[*v1.Job]{Source: c.jobs, Kind: "Job",
		Selector: func(j *v1.Job) *v1.LabelSelector { return j.GetSpec().GetSelector() }}
	c.loop = controller.New(controller.Config{
		Name: "job", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.jobs.HasSynced, c.pods.HasSynced},
	})
	c.jobs.AddIndex(controller.IndexNamespace, controller.NamespaceIndex[*v1.Job])
	c.pods.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.Pod])
	c.pods.AddIndex(controller.IndexOrphanNamespace, controller.OrphanNamespaceIndex[*v1.Pod])
	c.jobs.AddHandler(informer.Handler[*v1.Job]{
		OnAdd:    func(j *v1.Job) { c.loop.EnqueueObject(j) },
		OnUpdate: func(_, j *v1.Job) { c.loop.EnqueueObject(j) },
		OnDelete: func(j *v1.Job) { c.exp.Delete(v1.Key(j)); c.loop.EnqueueObject(j) },
	})
	c.pods.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd:    func(p *v1.Pod) { c.observeRemoval(p); c.podChanged(p, true) },
		OnUpdate: func(old, p *v1.Pod) { c.observeRemoval(p); c.podChanged(old, false); c.podChanged(p, false) },
		OnDelete: func(p *v1.Pod) { c.removing.observed(p.GetMetadata().GetUid()); c.podDeleted(p) },
	})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// orphanPrefix marks keys of pods that carry the tracking finalizer but
// whose Job is not in the cache: their sync removes the finalizer once the
// Job is confirmed gone.
const orphanPrefix = "pod:"

func (c *Controller) podChanged(p *v1.Pod, added bool) {
	m := p.GetMetadata()
	ref := controller.ControllerRef(m)
	if ref == nil || ref.Kind != "Job" {
		if ref == nil {
			for _, j := range c.owners.Matching(m) {
				c.loop.EnqueueObject(j)
			}
		}
		return
	}
	j := c.owners.Of(m.GetNamespace(), ref)
	if j == nil {
		if hasFinalizer(p) {
			c.loop.Enqueue(orphanPrefix + v1.Key(p))
		}
		return
	}
	key := v1.Key(j)
	if added {
		c.exp.CreationObserved(key)
	}
	c.loop.Enqueue(key)
}

func (c *Controller) podDeleted(p *v1.Pod) {
	m := p.GetMetadata()
	if ref := controller.ControllerRef(m); ref != nil {
		if j := c.owners.Of(m.GetNamespace(), ref); j != nil {
			c.exp.DeletionObserved(v1.Key(j), m.GetUid())
			c.loop.EnqueueObject(j)
		}
	}
}

// observeRemoval drops p from the pending finalizer removals once the
// cache shows it without the finalizer.
func (c *Controller) observeRemoval(p *v1.Pod) {
	if !hasFinalizer(p) {
		c.removing.observed(p.GetMetadata().GetUid())
	}
}

// tracked reports whether p still holds the tracking finalizer: it has it
// and the controller has not removed it already (removals).
func (c *Controller) tracked(p *v1.Pod) bool {
	return hasFinalizer(p) && !c.removing.pending(p.GetMetadata().GetUid())
}

func hasFinalizer(p *v1.Pod) bool {
	for _, f := range p.GetMetadata().GetFinalizers() {
		if f == TrackingFinalizer {
			return true
		}
	}
	return false
}

// syncOrphan removes the tracking finalizer of a pod whose Job is gone.
func (c *Controller) syncOrphan(ctx context.Context, podKey string) error {
	p, ok := c.pods.Get(podKey)
	if !ok || !hasFinalizer(p) {
		return nil
	}
	m := p.GetMetadata()
	ref := controller.ControllerRef(m)
	if ref == nil || c.owners.Of(m.GetNamespace(), ref) != nil {
		return nil // adopted or owned by a Job we know: its sync handles it
	}
	if j, err := c.jobAPI.Get(ctx, m.GetNamespace(), ref.Name); err == nil && j.GetMetadata().GetUid() == ref.Uid {
		c.loop.EnqueueObject(j) // the cache lags: the Job exists
		return nil
	}
	return c.removeFinalizers(ctx, []*v1.Pod{p})
}

func isOrphanKey(key string) (string, bool) { return strings.CutPrefix(key, orphanPrefix) }
