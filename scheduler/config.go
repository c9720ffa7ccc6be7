package scheduler

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/api/record"
	"github.com/tugboat/tugboat/scheduler/framework/plugins"
)

// DefaultSchedulerName is the spec.schedulerName of pods the default
// scheduler places (an empty schedulerName means it too).
const DefaultSchedulerName = "default-scheduler"

// Config is the scheduler's configuration. Zero fields take the defaults
// documented on them.
type Config struct {
	// SchedulerName selects the pods to place (default "default-scheduler").
	SchedulerName string
	// Filters names the filter plugins to run (default: all of
	// plugins.FilterNames, in that order).
	Filters []string
	// Scores names the score plugins as "Name" or "Name=weight" (default
	// plugins.DefaultScores).
	Scores []string
	// PercentageOfNodesToScore: stop filtering once this share of the nodes
	// fits (at least 100 nodes); 0 adapts to the cluster's size.
	PercentageOfNodesToScore int
	// Parallelism is the number of goroutines filtering nodes for one
	// decision (default 1: on small machines the hand-off costs more than
	// it saves; see the README's numbers).
	Parallelism int
	// BindConcurrency is how many binds may be in flight (default 64).
	BindConcurrency int
	// StatusWorkers write the PodScheduled=False condition of unschedulable
	// pods (default 4).
	StatusWorkers int
	// EventWriters is how many Events (Scheduled, FailedScheduling) the
	// recorder writes at once (default record.Shards, 16); beyond
	// record.MaxPending waiting events it drops and counts them.
	EventWriters int

	// LeaderElect makes replicas elect one active scheduler through the
	// Lease LeaseNamespace/LeaseName.
	LeaderElect    bool
	LeaseNamespace string // default kube-system
	LeaseName      string // default scheduler
	LeaseDuration  time.Duration
	RenewDeadline  time.Duration
	RetryPeriod    time.Duration
	// Identity names this replica in the lease and in its bindings; it must
	// be unique among the replicas (default hostname_pid_random).
	Identity string

	// InitialBackoff, MaxBackoff: retry delays after failed attempts
	// (default 1s doubling to 10s). UnschedulableTimeout: the longest an
	// unschedulable pod waits for a helpful event (default 5m).
	InitialBackoff       time.Duration
	MaxBackoff           time.Duration
	UnschedulableTimeout time.Duration
	// AssumedTTL: how long a bound pod may stay assumed without the informer
	// reporting it (default 30s).
	AssumedTTL time.Duration

	// MetricsListen serves /metrics, /healthz and /debug/pprof ("" disables).
	MetricsListen string
	// Registry receives the metrics (default: a new registry).
	Registry *prometheus.Registry
	Logger   *slog.Logger
}

// Validate names the first bad field, by its flag.
func (c *Config) Validate() error {
	if c.PercentageOfNodesToScore < 0 || c.PercentageOfNodesToScore > 100 {
		return fmt.Errorf("--percentage-of-nodes-to-score: %d is not between 0 (adaptive) and 100", c.PercentageOfNodesToScore)
	}
	if c.Parallelism < 0 {
		return fmt.Errorf("--parallelism: %d must be at least 1", c.Parallelism)
	}
	if c.BindConcurrency < 0 {
		return fmt.Errorf("--bind-concurrency: %d must be at least 1", c.BindConcurrency)
	}
	if c.StatusWorkers < 0 {
		return fmt.Errorf("StatusWorkers: %d must be at least 1", c.StatusWorkers)
	}
	if c.EventWriters < 0 {
		return fmt.Errorf("--event-writers: %d must be at least 1", c.EventWriters)
	}
	if c.Filters != nil {
		fs, err := plugins.NewFilters(c.Filters)
		if err != nil {
			return err
		}
		if len(fs) == 0 {
			return fmt.Errorf("--filters: empty; name at least one of the filters")
		}
	}
	if c.Scores != nil {
		if _, err := plugins.NewScores(c.Scores); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"--leader-elect-lease-duration", c.LeaseDuration}, {"--leader-elect-renew-deadline", c.RenewDeadline},
		{"--leader-elect-retry-period", c.RetryPeriod}, {"InitialBackoff", c.InitialBackoff}, {"MaxBackoff", c.MaxBackoff},
		{"UnschedulableTimeout", c.UnschedulableTimeout}, {"AssumedTTL", c.AssumedTTL},
	} {
		if d.v < 0 {
			return fmt.Errorf("%s: %v must not be negative", d.flag, d.v)
		}
	}
	if c.LeaderElect && c.LeaseDuration != 0 && c.RenewDeadline != 0 && c.RenewDeadline >= c.LeaseDuration {
		return fmt.Errorf("--leader-elect-renew-deadline: %v must be shorter than --leader-elect-lease-duration %v", c.RenewDeadline, c.LeaseDuration)
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %v", c.MetricsListen, err)
		}
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerName
	}
	if c.Filters == nil {
		c.Filters = plugins.FilterNames()
	}
	if c.Scores == nil {
		c.Scores = plugins.DefaultScores()
	}
	if c.Parallelism == 0 {
		c.Parallelism = 1
	}
	if c.BindConcurrency == 0 {
		c.BindConcurrency = 64
	}
	if c.StatusWorkers == 0 {
		c.StatusWorkers = 4
	}
	if c.EventWriters == 0 {
		c.EventWriters = record.Shards
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = "kube-system"
	}
	if c.LeaseName == "" {
		c.LeaseName = "scheduler"
	}
	if c.Identity == "" {
		c.Identity = component.Identity() + "_" + strconv.FormatUint(rand.Uint64()&0xffffff, 16)
	}
	if c.Registry == nil {
		c.Registry = prometheus.NewRegistry()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
