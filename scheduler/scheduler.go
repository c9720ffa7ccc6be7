// Package scheduler places pods on nodes. It watches nodes and pods,
// keeps a model of what every node has left (package cache), queues the
// pods that have no node (package queue), picks a node for each with the
// filter and score plugins (packages framework and plugins), and commits
// the choice through the API's Bind. It never starts anything itself.
//
// Loop (one goroutine, while leading): pop a pod -> update the snapshot
// from the cache (only the nodes changed since the last decision) -> filter
// and score -> assume the pod on the chosen node in the cache, so the next
// decision sees its resources as used -> hand it to the binder and go on.
// Binds run asynchronously, BindConcurrency at a time; a failed bind rolls
// the assumption back and, unless the pod was bound by someone else or is
// gone, retries it after a backoff. A pod no node fits gets PodScheduled=
// False/Unschedulable with "0/N nodes are available: ..." and a
// FailedScheduling Event, and waits in the queue until a change in the
// cluster could help it.
//
// Contract: only pods whose spec.schedulerName is Config.SchedulerName (or
// empty, for the default scheduler), without a node and without a
// deletionTimestamp are placed. With LeaderElect, replicas share the Lease
// kube-system/scheduler and only the holder schedules; the others keep
// their caches warm so a takeover starts at once.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/leaderelection"
	"github.com/tugboat/tugboat/api/metricsserver"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/cache"
	"github.com/tugboat/tugboat/scheduler/framework"
	"github.com/tugboat/tugboat/scheduler/framework/plugins"
	"github.com/tugboat/tugboat/scheduler/queue"
)

// Scheduler is one scheduler replica.
type Scheduler struct {
	cfg    Config
	client *client.Client
	log    *slog.Logger
	pods   *informer.Informer[*v1.Pod]
	nodes  *informer.Informer[*v1.Node]
	// namespaces give namespaceSelector of pod affinity terms the labels.
	namespaces *informer.Informer[*v1.Namespace]
	// pdbs are the PodDisruptionBudgets preemption honours.
	pdbs     *informer.Informer[*v1.PodDisruptionBudget]
	cache    *cache.Cache
	queue    *queue.Queue
	pipeline *framework.Pipeline
	snapshot *cache.Snapshot
	recorder *record.Recorder
	status   *statusWriter
	metrics  *metrics

	volumes *volumeCaches
	claims  *claimCaches
	// nominated are the pending pods a preemption nominated to a node.
	nominated *nominator

	binds  chan struct{} // a slot per bind in flight
	bindWG sync.WaitGroup
}

// New builds a scheduler; Run starts it.
func New(c *client.Client, cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	filters, err := plugins.NewFilters(cfg.Filters)
	if err != nil {
		return nil, err
	}
	scores, err := plugins.NewScores(cfg.Scores)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("component", "scheduler")
	var s *Scheduler
	s = &Scheduler{
		cfg:        cfg,
		client:     c,
		log:        log,
		pods:       informer.New(client.For[*v1.Pod](c), informer.Options{Logger: log}),
		nodes:      informer.New(client.For[*v1.Node](c), informer.Options{Logger: log}),
		namespaces: informer.New(client.For[*v1.Namespace](c), informer.Options{Logger: log}),
		pdbs:       informer.New(client.For[*v1.PodDisruptionBudget](c), informer.Options{Logger: log}),
		cache:      cache.New(cache.Config{AssumedTTL: cfg.AssumedTTL, Logger: log}),
		queue: queue.New(queue.Config{
			InitialBackoff: cfg.InitialBackoff, MaxBackoff: cfg.MaxBackoff, UnschedulableTimeout: cfg.UnschedulableTimeout,
		}),
		pipeline: framework.NewPipeline(framework.PipelineConfig{
			Filters: filters, Scores: scores,
			PercentageOfNodesToScore: cfg.PercentageOfNodesToScore, Parallelism: cfg.Parallelism,
			NamespaceLabels: func(ns string) map[string]string { return s.namespaceLabels(ns) },
		}),
		snapshot:  cache.NewSnapshot(),
		nominated: newNominator(),
		recorder:  record.New(c, cfg.SchedulerName, cfg.Identity, cfg.Registry, log, record.WithWriters(cfg.EventWriters)),
		binds:     make(chan struct{}, cfg.BindConcurrency),
	}
	s.status = newStatusWriter(client.For[*v1.Pod](c), s.recorder, log)
	s.metrics = newMetrics(cfg.Registry, s.queue, s.cache)
	_ = cfg.Registry.Register(collectors.NewGoCollector())
	_ = cfg.Registry.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	s.volumes = newVolumeCaches(c, s)
	s.claims = newClaimCaches(c, s)
	s.pods.AddHandler(s.podHandler())
	s.nodes.AddHandler(s.nodeHandler())
	s.namespaces.AddHandler(s.namespaceHandler())
	return s, nil
}

// Registry is where the scheduler's metrics are registered.
func (s *Scheduler) Registry() *prometheus.Registry { return s.cfg.Registry }

// Run watches, and schedules while leading, until ctx ends or leadership
// is lost (an error: the process should exit and be restarted).
func (s *Scheduler) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lis net.Listener
	if s.cfg.MetricsListen != "" {
		var err error
		if lis, err = net.Listen("tcp", s.cfg.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %s: %w", s.cfg.MetricsListen, err)
		}
	}
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	goRun := func(name string, run func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				select {
				case errc <- fmt.Errorf("%s: %w", name, err):
				default:
				}
				cancel()
			}
		}()
	}
	goRun("pod informer", s.pods.Run)
	goRun("node informer", s.nodes.Run)
	goRun("namespace informer", s.namespaces.Run)
	goRun("disruption budget informer", s.pdbs.Run)
	goRun("claim informer", s.volumes.pvcs.Run)
	goRun("volume informer", s.volumes.pvs.Run)
	goRun("storage class informer", s.volumes.scs.Run)
	goRun("resource claim informer", s.claims.claims.Run)
	goRun("device class informer", s.claims.classes.Run)
	goRun("queue", s.queue.Run)
	goRun("cache", s.cache.Run)
	goRun("event recorder", func(ctx context.Context) error { s.recorder.Run(ctx); return nil })
	goRun("status writer", func(ctx context.Context) error { return s.status.Run(ctx, s.cfg.StatusWorkers) })
	if lis != nil {
		goRun("metrics server", func(ctx context.Context) error {
			return metricsserver.ServeListener(ctx, lis, s.cfg.Registry, s.healthz)
		})
	}
	err := s.runScheduling(ctx)
	cancel()
	wg.Wait()
	select {
	case e := <-errc:
		err = errors.Join(err, e)
	default:
	}
	return err
}

// runScheduling waits for the caches, then schedules (under leader
// election if configured) until ctx ends.
func (s *Scheduler) runScheduling(ctx context.Context) error {
	if !s.pods.WaitForSync(ctx) || !s.nodes.WaitForSync(ctx) || !s.namespaces.WaitForSync(ctx) || !s.pdbs.WaitForSync(ctx) || !s.volumes.pvcs.WaitForSync(ctx) ||
		!s.volumes.pvs.WaitForSync(ctx) || !s.volumes.scs.WaitForSync(ctx) || !s.claims.claims.WaitForSync(ctx) || !s.claims.classes.WaitForSync(ctx) {
		return nil
	}
	st := s.cache.Stats()
	s.log.Info("caches synced", "nodes", st.Nodes, "boundPods", st.Pods, "pending", s.queue.Len().Active)
	if !s.cfg.LeaderElect {
		s.lead(ctx)
		return nil
	}
	return leaderelection.Run(ctx, s.client, leaderelection.Config{
		Namespace: s.cfg.LeaseNamespace, Name: s.cfg.LeaseName, Identity: s.cfg.Identity,
		LeaseDuration: s.cfg.LeaseDuration, RenewDeadline: s.cfg.RenewDeadline, RetryPeriod: s.cfg.RetryPeriod,
		Logger: s.log,
	}, s.lead)
}

// lead schedules until ctx ends, then waits for the binds in flight.
func (s *Scheduler) lead(ctx context.Context) {
	s.metrics.leader.Set(1)
	defer s.metrics.leader.Set(0)
	s.log.Info("scheduling", "identity", s.cfg.Identity)
	for ctx.Err() == nil {
		s.scheduleOne(ctx)
	}
	s.bindWG.Wait()
}

func (s *Scheduler) healthz(context.Context) error {
	if !s.pods.HasSynced() || !s.nodes.HasSynced() {
		return errors.New("informers not synced")
	}
	return nil
}
