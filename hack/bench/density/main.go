// Command density is the density benchmark of issue 20: a real control
// plane (apiserver with embedded etcd, controller-manager, scheduler, each
// its own process with its own certificate) and N hollow nodes in one
// hack/hollow process; Deployments that create PodsPerNode pods per node
// at a steady rate, every pod Running, then every Deployment deleted.
//
//	go run ./hack/bench/density -nodes 1000            # the default run
//	go run ./hack/bench/density -nodes 5000            # the headline
//
// It reports (numbers, never pass/fail; the targets are printed
// next to them): the hollow process's RSS per node at idle before the
// load; pod startup latency, creationTimestamp to Running as a watch sees
// it (p50/p90/p99); API call latency p99 per verb and kind (the
// apiserver's tugboat_apiserver_request_duration_seconds, watches left
// out: they last as long as the stream); CPU seconds and peak RSS of every
// component; the time from the deletes to no pod left; watch delivery
// lag (watchlag.go); etcd's write rate and db size; the leader Leases'
// renewals; each event recorder's drops; and PNG charts of latency and
// RSS over the load (-plots). -idle-only stops
// after the idle figures (RSS, Go heap in use and goroutines per node,
// over a 1-node process's), -profile DIR saves the heap and goroutine profiles at idle.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

type options struct {
	nodes, podsPerNode, rate, deploymentSize int
	workDir, binDir                          string
	timeout                                  time.Duration
	idle                                     time.Duration
	keep                                     bool
	// idleOnly stops after the idle figures (no pods).
	idleOnly bool
	// profile, if set, is where the hollow process's heap profile at
	// idle is saved.
	profile string
	// plots is where the PNG charts of the load go.
	plots string
	// maxInflight is the apiserver's --max-requests-inflight.
	maxInflight int
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 1000, "hollow nodes (5000 for the headline run)")
	flag.IntVar(&o.podsPerNode, "pods-per-node", 30, "pods per node the Deployments create in all")
	flag.IntVar(&o.rate, "rate", 300, "pods per second the Deployments are created at (each Deployment's replicas count)")
	flag.IntVar(&o.deploymentSize, "deployment-size", 100, "replicas of each Deployment")
	flag.StringVar(&o.workDir, "work-dir", "", "where binaries, PKI, etcd data and logs go (default: a temp dir, removed unless -keep)")
	flag.StringVar(&o.binDir, "bin-dir", "", "prebuilt apiserver, controller-manager, scheduler and hollow binaries (default: go build them into the work dir)")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long in any one phase")
	flag.DurationVar(&o.idle, "idle", 25*time.Second, "how long the Ready nodes idle before their RSS is read (two lease and status periods)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work dir (logs) afterwards")
	flag.BoolVar(&o.idleOnly, "idle-only", false, "measure the hollow process at idle only (RSS, heap and goroutines per node), no pods")
	flag.StringVar(&o.profile, "profile", "", "save the hollow process's heap profile at idle as DIR/hollow-heap-<nodes>.pprof (go tool pprof -sample_index=inuse_space) and its goroutines as DIR/hollow-goroutines-<nodes>.pprof (text)")
	flag.StringVar(&o.plots, "plots", filepath.Join("_output", "density"), "where the PNG charts of the load go (density-<nodes>-latency.png, density-<nodes>-rss.png)")
	flag.IntVar(&o.maxInflight, "max-requests-inflight", 600, "the apiserver's --max-requests-inflight (API Priority and Fairness seats; 600 is its default)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := run(o, log); err != nil {
		fmt.Fprintln(os.Stderr, "density:", err)
		os.Exit(1)
	}
}

func run(o options, log *slog.Logger) error {
	if o.nodes <= 0 || o.podsPerNode <= 0 || o.rate <= 0 || o.deploymentSize <= 0 {
		return fmt.Errorf("-nodes, -pods-per-node, -rate and -deployment-size must be positive")
	}
	ctx := context.Background()
	if o.workDir == "" {
		d, err := os.MkdirTemp("", "tugboat-density-")
		if err != nil {
			return err
		}
		o.workDir = d
		if !o.keep {
			defer os.RemoveAll(d)
		}
	}
	if o.binDir == "" {
		o.binDir = filepath.Join(o.workDir, "bin")
		log.Info("building binaries", "dir", o.binDir)
		for b, pkg := range map[string]string{"apiserver": "./cmd/apiserver", "controller-manager": "./cmd/controller-manager", "scheduler": "./cmd/scheduler", "hollow": "./hack/hollow"} {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(o.binDir, b), pkg)
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("go build %s (run from the repository root): %w", pkg, err)
			}
		}
	}
	r, err := measure(ctx, o, log)
	if err != nil {
		return err
	}
	r.print(os.Stdout, o)
	if o.idleOnly {
		return nil
	}
	paths, err := r.writePlots(o.plots)
	for _, p := range paths {
		fmt.Printf("plot: %s\n", p)
	}
	return err
}
