// Command controller-manager runs Tugboat's controllers (ReplicaSet,
// Deployment, garbage collector, node lifecycle, node IPAM) against the
// apiserver, with leader election so several replicas can run.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/controllers/manager"
	"github.com/tugboat/tugboat/controllers/volume"
)

func main() {
	var cfg manager.Config
	var cf component.ClientFlags
	var logs component.LogFlags
	var list string
	fs := flag.NewFlagSet("controller-manager", flag.ExitOnError)
	cf.Register(fs)
	logs.Register(fs)
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "127.0.0.1:10257", "HTTP address for /metrics, /healthz and /debug/pprof (empty disables)")
	fs.StringVar(&list, "controllers", "*", "controllers to run: * for all, a name to add one, -name to remove one ("+strings.Join(manager.Names(), ", ")+")")
	fs.DurationVar(&cfg.ResyncPeriod, "resync-period", 30*time.Minute, "replay every cached object to the controllers at this interval (negative disables)")

	fs.BoolVar(&cfg.LeaderElection.Enabled, "leader-elect", true, "act only while holding the lease kube-system/controller-manager")
	fs.DurationVar(&cfg.LeaderElection.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over")
	fs.DurationVar(&cfg.LeaderElection.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader retries renewing before it stops acting")
	fs.DurationVar(&cfg.LeaderElection.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "interval between lease acquire and renew attempts")

	fs.IntVar(&cfg.ReplicaSet.Workers, "concurrent-replicaset-syncs", 5, "ReplicaSets synced in parallel")
	fs.IntVar(&cfg.Deployment.Workers, "concurrent-deployment-syncs", 5, "Deployments synced in parallel")
	fs.IntVar(&cfg.GarbageCollector.Workers, "concurrent-gc-syncs", 20, "objects the garbage collector examines in parallel")
	fs.IntVar(&cfg.Endpoints.Workers, "concurrent-endpoint-syncs", 5, "Services whose Endpoints are synced in parallel")
	fs.IntVar(&cfg.EndpointSlice.Workers, "concurrent-service-endpoint-syncs", 5, "Services whose EndpointSlices are synced in parallel")
	fs.IntVar(&cfg.EndpointSlice.MaxEndpointsPerSlice, "max-endpoints-per-slice", 100, "endpoints in one EndpointSlice (1-1000)")
	fs.IntVar(&cfg.Job.Workers, "concurrent-job-syncs", 5, "Jobs synced in parallel")
	fs.IntVar(&cfg.CronJob.Workers, "concurrent-cronjob-syncs", 5, "CronJobs synced in parallel")
	fs.IntVar(&cfg.DaemonSet.Workers, "concurrent-daemonset-syncs", 2, "DaemonSets synced in parallel")
	fs.IntVar(&cfg.StatefulSet.Workers, "concurrent-statefulset-syncs", 5, "StatefulSets synced in parallel")
	fs.IntVar(&cfg.ResourceQuota.Workers, "concurrent-resource-quota-syncs", 5, "ResourceQuotas recounted in parallel")
	fs.DurationVar(&cfg.ResourceQuota.SyncPeriod, "resource-quota-sync-period", 5*time.Minute, "how often every ResourceQuota's status.used is recounted")
	fs.DurationVar(&cfg.HorizontalPodAutoscaler.SyncPeriod, "horizontal-pod-autoscaler-sync-period", 15*time.Second, "how often every HorizontalPodAutoscaler measures its pods and rescales")
	fs.StringVar(&cfg.PersistentVolume.LocalPathDir, "local-path-dir", "/var/lib/tugboat/local-path", "folder on every node under which the local-path provisioner makes volumes")
	fs.StringVar(&cfg.PersistentVolume.HelperImage, "local-path-helper-image", volume.DefaultHelperImage, "image of the helper pods that remove a deleted local-path volume's folder on its node (needs rm)")
	fs.Float64Var(&cfg.HorizontalPodAutoscaler.Tolerance, "horizontal-pod-autoscaler-tolerance", 0.1, "relative metric change an autoscaler ignores")
	fs.DurationVar(&cfg.Job.PodBackoff, "job-pod-backoff", 10*time.Second, "delay before a Job's failed pod is replaced, doubled per further failure")
	fs.DurationVar(&cfg.Job.PodBackoffMax, "job-pod-backoff-max", 6*time.Minute, "the longest such delay")

	fs.DurationVar(&cfg.NodeLifecycle.GracePeriod, "node-monitor-grace-period", 15*time.Second, "a node whose lease is not renewed for this long becomes unreachable (Ready=Unknown, unreachable taint)")
	fs.DurationVar(&cfg.NodeLifecycle.MonitorPeriod, "node-monitor-period", 5*time.Second, "how often every node's health is checked even without events")
	fs.DurationVar(&cfg.NodeLifecycle.PodEvictionTimeout, "pod-eviction-timeout", 5*time.Second, "default toleration of the unreachable and not-ready taints (a pod's own tolerationSeconds wins)")
	fs.Float64Var(&cfg.NodeLifecycle.EvictionRate, "node-eviction-rate", 10, "pods evicted per second, cluster-wide (also the burst)")
	fs.Float64Var(&cfg.NodeLifecycle.SecondaryEvictionRate, "secondary-node-eviction-rate", 1, "eviction rate when a large cluster is partially disrupted")
	fs.Float64Var(&cfg.NodeLifecycle.UnhealthyThreshold, "unhealthy-zone-threshold", 0.55, "fraction of unhealthy nodes (and more than 2) from which evictions slow down or stop")
	fs.IntVar(&cfg.NodeLifecycle.LargeClusterThreshold, "large-cluster-size-threshold", 50, "clusters of at most this many nodes stop evicting when partially disrupted")

	fs.StringVar(&cfg.NodeIPAM.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "CIDR split into node pod CIDRs")
	fs.IntVar(&cfg.NodeIPAM.NodeCIDRMaskSize, "node-cidr-mask-size", 24, "prefix length of each node's pod CIDR")
	rootCA := fs.String("root-ca-file", "", "CA bundle published as the ConfigMap kube-root-ca.crt (key ca.crt) in every namespace, for pods to verify the apiserver; empty: --ca-file")
	lbPool := fs.String("lb-pool", "", "comma-separated IPv4 CIDRs or first-last ranges the load-balancer controller gives LoadBalancer Services; empty: the nodes' InternalIPs")
	_ = fs.Parse(os.Args[1:])
	cfg.Controllers = strings.Split(list, ",")
	if *lbPool != "" {
		cfg.LoadBalancer.Pool = strings.Split(*lbPool, ",")
	}

	component.Main("controller-manager", func(ctx context.Context) error {
		log, err := logs.Logger("controller-manager")
		if err != nil {
			return err
		}
		if f := *rootCA; f != "" || cf.CAFile != "" {
			if f == "" {
				f = cf.CAFile
			}
			if cfg.RootCACertPublisher.RootCA, err = os.ReadFile(f); err != nil {
				return fmt.Errorf("--root-ca-file: %w", err)
			}
		}
		c, err := cf.Client("controller-manager")
		if err != nil {
			return err
		}
		defer c.Close()
		cfg.Client, cfg.Logger = c, log
		return manager.Run(ctx, cfg)
	})
}
