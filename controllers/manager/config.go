package manager

import (
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
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

// Config is the controller-manager's configuration.
type Config struct {
	// Client reaches the apiserver. Required.
	Client *client.Client
	// Controllers selects what runs (--controllers): "*" is every
	// controller, a name adds one, "-name" removes one; default "*".
	Controllers []string
	// LeaderElection makes one of several replicas act.
	LeaderElection LeaderElection
	// ResyncPeriod replays every cached object to the controllers at this
	// interval, a safety net for missed events (--resync-period, default
	// 30m; negative disables).
	ResyncPeriod time.Duration
	// MetricsListen serves /metrics, /healthz and /debug/pprof ("" disables).
	MetricsListen string
	// Registry receives the metrics; nil makes a fresh one.
	Registry *prometheus.Registry
	// Identity names this replica in the lease and in Events (default hostname_pid).
	Identity string

	ReplicaSet       replicaset.Config
	Deployment       deployment.Config
	GarbageCollector garbagecollector.Config
	NodeLifecycle    nodelifecycle.Config
	NodeIPAM         nodeipam.Config
	Endpoints        endpoints.Config
	EndpointSlice    endpoints.SliceConfig
	LoadBalancer     loadbalancer.Config
	Job              job.Config
	CronJob          cronjob.Config
	Disruption       disruption.Config
	DaemonSet        daemonset.Config
	// HorizontalPodAutoscaler tunes the autoscaler controller.
	HorizontalPodAutoscaler podautoscaler.Config
	PersistentVolume        volume.Config
	StatefulSet             statefulset.Config
	ResourceQuota           resourcequota.Config
	// RootCACertPublisher publishes the cluster CA (--root-ca-file, by
	// default --ca-file) as kube-root-ca.crt in every namespace.
	RootCACertPublisher rootcacertpublisher.Config
	// ResourceClaim makes pods' ResourceClaims from their templates.
	ResourceClaim resourceclaim.Config

	Logger *slog.Logger
}

// LeaderElection configures the election on Lease kube-system/controller-manager.
type LeaderElection struct {
	// Enabled runs the controllers only while this replica holds the lease
	// (--leader-elect, default true).
	Enabled bool
	// Namespace and Name of the lease (default kube-system, controller-manager).
	Namespace, Name string
	// LeaseDuration, RenewDeadline, RetryPeriod: see api/leaderelection
	// (--leader-elect-lease-duration 15s, --leader-elect-renew-deadline 10s,
	// --leader-elect-retry-period 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Client == nil {
		return fmt.Errorf("controller-manager: a client is required (--server)")
	}
	if _, err := selectControllers(c.Controllers); err != nil {
		return err
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %v", c.MetricsListen, err)
		}
	}
	le := c.LeaderElection
	if le.Enabled {
		switch {
		case le.LeaseDuration < 0 || (le.LeaseDuration > 0 && le.LeaseDuration < time.Second):
			return fmt.Errorf("--leader-elect-lease-duration: must be at least 1s (the lease counts whole seconds), got %s", le.LeaseDuration)
		case le.RenewDeadline < 0:
			return fmt.Errorf("--leader-elect-renew-deadline: must be > 0, got %s", le.RenewDeadline)
		case le.RetryPeriod < 0:
			return fmt.Errorf("--leader-elect-retry-period: must be > 0, got %s", le.RetryPeriod)
		case le.LeaseDuration > 0 && le.RenewDeadline >= le.LeaseDuration:
			return fmt.Errorf("--leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s)", le.RenewDeadline, le.LeaseDuration)
		}
	}
	for _, v := range []interface{ Validate() error }{&c.ReplicaSet, &c.Deployment, &c.GarbageCollector, &c.NodeLifecycle, &c.NodeIPAM, &c.Endpoints, &c.EndpointSlice, &c.LoadBalancer, &c.Job, &c.CronJob, &c.Disruption, &c.DaemonSet, &c.HorizontalPodAutoscaler, &c.PersistentVolume, &c.StatefulSet, &c.ResourceQuota, &c.RootCACertPublisher, &c.ResourceClaim} {
		if err := v.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// selectControllers resolves the --controllers list to names, in the
// table's order.
func selectControllers(list []string) ([]string, error) {
	if len(list) == 0 {
		list = []string{"*"}
	}
	known := map[string]bool{}
	for _, e := range controllers() {
		known[e.name] = true
	}
	on := map[string]bool{}
	for _, item := range list {
		item = strings.TrimSpace(item)
		switch {
		case item == "*":
			for n := range known {
				on[n] = true
			}
		case strings.HasPrefix(item, "-") && known[item[1:]]:
			on[item[1:]] = false
		case known[item]:
			on[item] = true
		default:
			return nil, fmt.Errorf("--controllers: unknown controller %q (known: %s)", item, strings.Join(Names(), ", "))
		}
	}
	var out []string
	for _, e := range controllers() {
		if on[e.name] {
			out = append(out, e.name)
		}
	}
	return out, nil
}

// Names lists every controller the manager can run.
func Names() []string {
	var out []string
	for _, e := range controllers() {
		out = append(out, e.name)
	}
	return out
}
