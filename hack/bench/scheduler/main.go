// Command scheduler-bench measures the scheduler the way Kubernetes'
// scheduler_perf SchedulingBasic does: a real apiserver with its embedded
// etcd (fsync on), serving TLS with RBAC, and the real scheduler binary
// (system:kube-scheduler by its client certificate) as separate processes, N
// fake nodes and P pods created up front, then the scheduler started.
//
// For every node count it reports pods bound per second (average and
// per-second samples), the scheduler's decision latency p50/p99 (from its
// histogram), the end-to-end queue->bound latency, the CPU seconds each
// process used per pod while scheduling, and their resident memory. It
// then checks that every pod is bound and no node is over its allocatable.
//
// Usage (from the repository root):
//
//	go run ./hack/bench/scheduler -nodes 1000,5000 -pods 10000
//	go run ./hack/bench/scheduler -nodes 1000,5000 -pods 10000 -workload affinity
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type options struct {
	nodes         []int
	pods          int
	binDir        string
	workDir       string
	schedulerArgs []string
	schedulerEnv  []string
	timeout       time.Duration
	profile       string
	workload      string
	insecure      bool
}

func main() {
	var (
		o                          options
		nodes, schedArgs, schedEnv string
		keep                       bool
	)
	flag.StringVar(&nodes, "nodes", "1000,5000", "comma-separated node counts, one run each")
	flag.IntVar(&o.pods, "pods", 10000, "pods created before the scheduler starts")
	flag.StringVar(&o.binDir, "bin-dir", "", "folder with apiserver and scheduler binaries (default: go build them)")
	flag.StringVar(&o.workDir, "work-dir", "", "folder for etcd data and logs (default: a temporary folder)")
	flag.StringVar(&schedArgs, "scheduler-args", "", "extra scheduler flags, space-separated")
	flag.StringVar(&schedEnv, "scheduler-env", "", "extra environment of the scheduler, space-separated NAME=value")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up a run after this long")
	flag.StringVar(&o.profile, "cpu-profile", "", "folder to write 4s CPU profiles of both processes from the first bind, and the scheduler's heap profile at the end")
	flag.BoolVar(&keep, "keep", false, "keep the work folder")
	flag.StringVar(&o.workload, "workload", "basic", "basic (SchedulingBasic) or affinity (a third plain, a third with required pod anti-affinity, a third with topology spread)")
	flag.BoolVar(&o.insecure, "insecure", false, "run the apiserver without TLS, authentication and RBAC (default: TLS with client certificates and RBAC, as a cluster runs)")
	flag.Parse()
	for _, f := range strings.Split(nodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "-nodes: %q is not a positive number\n", f)
			os.Exit(2)
		}
		o.nodes = append(o.nodes, n)
	}
	if o.workload != "basic" && o.workload != "affinity" {
		fmt.Fprintf(os.Stderr, "-workload: %q is not basic or affinity\n", o.workload)
		os.Exit(2)
	}
	if o.pods <= 0 {
		fmt.Fprintln(os.Stderr, "-pods: must be positive")
		os.Exit(2)
	}
	o.schedulerArgs = strings.Fields(schedArgs)
	o.schedulerEnv = strings.Fields(schedEnv)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(context.Background(), o, keep, log); err != nil {
		fmt.Fprintln(os.Stderr, "scheduler-bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, keep bool, log *slog.Logger) error {
	if o.workDir == "" {
		d, err := os.MkdirTemp("", "scheduler-bench-")
		if err != nil {
			return err
		}
		o.workDir = d
		if !keep {
			defer os.RemoveAll(d)
		}
	}
	if o.binDir == "" {
		o.binDir = filepath.Join(o.workDir, "bin")
		log.Info("building binaries", "dir", o.binDir)
		if err := build(ctx, o.binDir); err != nil {
			return err
		}
	}
	var results []*result
	for _, n := range o.nodes {
		r, err := runOnce(ctx, o, n, log)
		if err != nil {
			return fmt.Errorf("%d nodes: %w", n, err)
		}
		results = append(results, r)
		r.print(os.Stdout)
	}
	printSummary(os.Stdout, o, results)
	return nil
}
