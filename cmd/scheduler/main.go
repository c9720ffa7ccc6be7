// Command scheduler places pods without a node on nodes, through the
// apiserver. See package scheduler.
package main

import (
	"context"
	"flag"
	"os"
	"runtime/debug"
	"strings"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/api/record"
	"github.com/tugboat/tugboat/scheduler"
	"github.com/tugboat/tugboat/scheduler/framework/plugins"
)

func main() {
	var (
		cfg     scheduler.Config
		clients component.ClientFlags
		logs    component.LogFlags
		filters string
		scores  string
	)
	fs := flag.NewFlagSet("scheduler", flag.ExitOnError)
	clients.Register(fs)
	logs.Register(fs)
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "127.0.0.1:10259", "HTTP address for /metrics, /healthz and /debug/pprof (empty disables)")
	fs.StringVar(&cfg.SchedulerName, "scheduler-name", scheduler.DefaultSchedulerName, "place pods whose spec.schedulerName is this")
	fs.BoolVar(&cfg.LeaderElect, "leader-elect", true, "elect one active replica through the Lease kube-system/scheduler")
	fs.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", 15e9, "how long a lease is valid after its last renewal")
	fs.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", 10e9, "how long the leader retries renewing before it stops scheduling")
	fs.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", 2e9, "interval between acquire and renew attempts")
	fs.StringVar(&filters, "filters", strings.Join(plugins.FilterNames(), ","), "comma-separated filter plugins to run (they run in the default order)")
	fs.StringVar(&scores, "scores", strings.Join(plugins.DefaultScores(), ","), "comma-separated score plugins as Name or Name=weight")
	fs.IntVar(&cfg.PercentageOfNodesToScore, "percentage-of-nodes-to-score", 0, "stop filtering once this percentage of the nodes fits (min 100 nodes); 0 adapts to the cluster size")
	fs.IntVar(&cfg.Parallelism, "parallelism", 1, "goroutines filtering the nodes of one decision")
	fs.IntVar(&cfg.BindConcurrency, "bind-concurrency", 64, "binds in flight at once")
	fs.IntVar(&cfg.EventWriters, "event-writers", record.Shards, "Events written at once; beyond record.MaxPending (20000) events waiting, they are dropped and counted (tugboat_events_dropped_total)")
	_ = fs.Parse(os.Args[1:])
	cfg.Filters = strings.Split(filters, ",")
	cfg.Scores = strings.Split(scores, ",")
	if scores == "" {
		cfg.Scores = []string{}
	}
	if os.Getenv("GOGC") == "" {
		// The heap is mostly the informers' long-lived objects and the
		// allocation rate is low, so collecting at +50% instead of +100%
		// costs little CPU and keeps RSS under 100 MiB at 5,000 nodes and
		// 10,000 pods (see scheduler/README.md). GOGC overrides it.
		debug.SetGCPercent(50)
	}
	component.Main("scheduler", func(ctx context.Context) error {
		log, err := logs.Logger("scheduler")
		if err != nil {
			return err
		}
		cfg.Logger = log
		c, err := clients.Client("scheduler")
		if err != nil {
			return err
		}
		defer c.Close()
		s, err := scheduler.New(c, cfg)
		if err != nil {
			return err
		}
		return s.Run(ctx)
	})
}
