// Package manager is the controller-manager: it runs every controller of
// package controllers on one set of shared informers (each kind is watched
// once), with one event recorder and one metrics registry, while it holds
// the Lease kube-system/controller-manager, so that several replicas can
// run for high availability and exactly one acts.
//
// Loop: campaign for the lease; on winning, build the informers and the
// selected controllers, start them, and run until the context ends or the
// lease is lost; losing it stops every controller and Run returns an error
// (the process exits and is restarted, as Kubernetes components do). Adding
// a controller is one subfolder and one entry in controllers().
package manager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/leaderelection"
	"github.com/tugboat/tugboat/api/metricsserver"
	"github.com/tugboat/tugboat/api/record"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/cronjob"
	"github.com/tugboat/tugboat/controllers/daemonset"
	"github.com/tugboat/tugboat/controllers/deployment"
	"github.com/tugboat/tugboat/controllers/disruption"
	"github.com/tugboat/tugboat/controllers/endpoints"
	"github.com/tugboat/tugboat/controllers/garbagecollector"
	"github.com/tugboat/tugboat/controllers/job"
	"github.com/tugboat/tugboat/controllers/loadbalancer"
	"github.com/tugboat/tugboat/controllers/nodeipam"
	"github.com/tugboat/tugboat/controllers/nodelifecycle"
	"github.com/tugboat/tugboat/controllers/podautoscaler"
	"github.com/tugboat/tugboat/controllers/replicaset"
	"github.com/tugboat/tugboat/controllers/resourceclaim"
	"github.com/tugboat/tugboat/controllers/resourcequota"
	"github.com/tugboat/tugboat/controllers/rootcacertpublisher"
	"github.com/tugboat/tugboat/controllers/statefulset"
	"github.com/tugboat/tugboat/controllers/volume"
)

type entry struct {
	name  string
	build func(d controller.Deps, cfg *Config) (controller.Runner, error)
}

// controllers is every controller the manager knows, in start order.
func controllers() []entry {
	return []entry{
		{"replicaset", func(d controller.Deps, c *Config) (controller.Runner, error) { return replicaset.New(d, c.ReplicaSet) }},
		{"deployment", func(d controller.Deps, c *Config) (controller.Runner, error) { return deployment.New(d, c.Deployment) }},
		{"garbagecollector", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return garbagecollector.New(d, c.GarbageCollector)
		}},
		{"nodelifecycle", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return nodelifecycle.New(d, c.NodeLifecycle)
		}},
		{"nodeipam", func(d controller.Deps, c *Config) (controller.Runner, error) { return nodeipam.New(d, c.NodeIPAM) }},
		{"endpoints", func(d controller.Deps, c *Config) (controller.Runner, error) { return endpoints.New(d, c.Endpoints) }},
		{"endpointslice", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return endpoints.NewSlices(d, c.EndpointSlice)
		}},
		{"loadbalancer", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return loadbalancer.New(d, c.LoadBalancer)
		}},
		{"job", func(d controller.Deps, c *Config) (controller.Runner, error) { return job.New(d, c.Job) }},
		{"cronjob", func(d controller.Deps, c *Config) (controller.Runner, error) { return cronjob.New(d, c.CronJob) }},
		{"disruption", func(d controller.Deps, c *Config) (controller.Runner, error) { return disruption.New(d, c.Disruption) }},
		{"daemonset", func(d controller.Deps, c *Config) (controller.Runner, error) { return daemonset.New(d, c.DaemonSet) }},
		{"statefulset", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return statefulset.New(d, c.StatefulSet)
		}},
		{"persistentvolume-binder", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return volume.New(d, c.PersistentVolume)
		}},
		{"horizontalpodautoscaling", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return podautoscaler.New(d, c.HorizontalPodAutoscaler)
		}},
		{"resourcequota", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return resourcequota.New(d, c.ResourceQuota)
		}},
		{"root-ca-cert-publisher", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return rootcacertpublisher.New(d, c.RootCACertPublisher)
		}},
		{"resourceclaim", func(d controller.Deps, c *Config) (controller.Runner, error) {
			return resourceclaim.New(d, c.ResourceClaim)
		}},
	}
}

// Run runs the controller-manager until ctx ends (nil) or it fails or
// loses leadership (an error).
func Run(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Identity == "" {
		cfg.Identity = component.Identity()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
		cfg.Registry.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = 30 * time.Minute
	}
	log := cfg.Logger
	leader := controller.Register(cfg.Registry, prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "tugboat_controller_manager_leader", Help: "1 while this replica holds the controller-manager lease."}))
	metrics := controller.NewMetrics(cfg.Registry)
	rec := record.New(cfg.Client, "controller-manager", cfg.Identity, cfg.Registry, log)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); rec.Run(ctx) }()
	if cfg.MetricsListen != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := metricsserver.Serve(ctx, cfg.MetricsListen, cfg.Registry, nil); err != nil {
				log.Error("metrics server failed", "addr", cfg.MetricsListen, "err", err)
			}
		}()
	}
	deps := func() controller.Deps {
		resync := cfg.ResyncPeriod
		if resync < 0 {
			resync = 0
		}
		return controller.Deps{Client: cfg.Client, Informers: controller.NewInformers(cfg.Client, resync, log),
			Recorder: rec, Metrics: metrics, Registry: cfg.Registry, Logger: log}
	}
	le := cfg.LeaderElection
	if !le.Enabled {
		leader.Set(1)
		return runControllers(ctx, deps(), &cfg)
	}
	if le.Namespace == "" {
		le.Namespace = "kube-system"
	}
	if le.Name == "" {
		le.Name = "controller-manager"
	}
	var leadErr error
	err := leaderelection.Run(ctx, cfg.Client, leaderelection.Config{
		Namespace: le.Namespace, Name: le.Name, Identity: cfg.Identity,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod, Logger: log,
	}, func(ctx context.Context) {
		leader.Set(1)
		defer leader.Set(0)
		leadErr = runControllers(ctx, deps(), &cfg)
	})
	if leadErr != nil {
		return leadErr
	}
	return err
}

// runControllers builds the selected controllers on fresh informers and
// runs them until ctx ends or one fails.
func runControllers(ctx context.Context, d controller.Deps, cfg *Config) error {
	names, _ := selectControllers(cfg.Controllers)
	enabled := map[string]bool{}
	for _, n := range names {
		enabled[n] = true
	}
	if enabled["garbagecollector"] && len(cfg.GarbageCollector.Kinds) == 0 {
		gc := *cfg
		gc.GarbageCollector.Kinds = listableKinds(ctx, d, garbagecollector.DefaultKinds())
		cfg = &gc
	}
	var runners []controller.Runner
	for _, e := range controllers() {
		if !enabled[e.name] {
			continue
		}
		r, err := e.build(d, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", e.name, err)
		}
		runners = append(runners, r)
	}
	d.Logger.Info("starting controllers", "controllers", names)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(runners)+1)
	go func() { errs <- d.Informers.Run(ctx) }()
	for _, r := range runners {
		go func() { errs <- r.Run(ctx) }()
	}
	var first error
	for range len(runners) + 1 {
		err := <-errs
		if err != nil && first == nil {
			first = err
		}
		cancel() // one stops: stop all (with ctx ended, each returns nil)
	}
	return first
}

// listableKinds keeps the kinds this replica's credentials may list: the
// garbage collector watches those, and an informer for a forbidden kind
// would never sync. Other errors keep the kind (the informer retries).
func listableKinds(ctx context.Context, d controller.Deps, names []string) []string {
	var out, skipped []string
	for _, name := range names {
		k, err := kinds.Lookup(name)
		if err != nil {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, _, err = client.ForKind(d.Client, k).List(lctx, client.ListOptions{Limit: 1})
		cancel()
		if errors.Is(err, apierrors.ErrForbidden) {
			skipped = append(skipped, name)
			continue
		}
		out = append(out, name)
	}
	if len(skipped) > 0 {
		d.Logger.Warn("garbage collector: not allowed to list these kinds; their ownerReferences are not collected", "kinds", skipped)
	}
	return out
}
