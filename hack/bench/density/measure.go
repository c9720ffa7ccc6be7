package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	procfs "github.com/tugboat/tugboat/hack/bench/internal/proc"
	"github.com/tugboat/tugboat/hack/bench/internal/stats"
	"github.com/tugboat/tugboat/internal/promtext"
	"github.com/tugboat/tugboat/kubelet/hollow"
)

// result is what one run measured.
type result struct {
	nodes, pods      int
	nodesReady       time.Duration // hollow start -> every node Ready
	idleRSS          int64         // the hollow process at idle, bytes
	idleBaseline     int64         // a hollow process with no node, bytes
	idleHeap         float64       // its Go heap in use at idle, bytes (go_memstats_heap_inuse_bytes)
	idleHeapBaseline float64       // the 1-node process's
	idleStacks       float64       // its goroutine stacks in use at idle, bytes (go_memstats_stack_inuse_bytes)
	idleStacksBase   float64       // the 1-node process's
	goroutines       float64       // its goroutines at idle (go_goroutines)
	goroutinesBase   float64       // the 1-node process's
	createSpan       time.Duration // first to last Deployment create
	allRunning       time.Duration // first create -> every pod Running
	startup          []time.Duration
	startupAt        []time.Duration // when each startup was seen, from the first create
	watch            watchLag
	leases           []leaseStats
	dbSize           []sample // etcd's db size over the load
	dbErr            error
	rss              map[string][]sample
	events           []eventDrops
	loadStart        time.Time
	deleteAll        time.Duration
	apiP99           []apiLatency
	cpu              map[string]float64
	peakRSS          map[string]int64
	order            []string
	leasesAfterDeath int
}

type apiLatency struct {
	kind, verb string
	count      float64
	p99        float64
}

func measure(ctx context.Context, o options, log *slog.Logger) (*result, error) {
	pkiDir := filepath.Join(o.workDir, "pki")
	if err := pki.Init(pki.InitOptions{Dir: pkiDir}); err != nil {
		return nil, err
	}
	logs := filepath.Join(o.workDir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	apiAddr, _ := procfs.FreeAddr()
	apiMetrics, _ := procfs.FreeAddr()
	api, err := start("apiserver", filepath.Join(o.binDir, "apiserver"), logs, "--pki-dir", pkiDir, "--listen", apiAddr, "--kube-listen", "",
		"--metrics-listen", apiMetrics, "--data-dir", filepath.Join(o.workDir, "etcd"), "--log-level", "warn",
		"--max-connections", strconv.Itoa(4*o.nodes+1000), "--max-connections-per-host", strconv.Itoa(2*o.nodes+500),
		"--max-watches-per-connection", "-1", "--max-watches-per-user", "-1", "--max-requests-inflight", strconv.Itoa(o.maxInflight))
	if err != nil {
		return nil, err
	}
	procs := []*proc{api}
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(stopGrace)
		}
	}()
	tlsCfg, err := client.TLSFromFiles(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		return nil, err
	}
	c, err := client.New(client.Config{Server: apiAddr, TLS: tlsCfg, UserAgent: "density-bench"})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := waitFor(ctx, 60*time.Second, procs, func() error {
		_, err := client.For[*v1.Namespace](c).Get(ctx, "", "default")
		return err
	}); err != nil {
		return nil, fmt.Errorf("apiserver: %w", err)
	}
	creds := func(name string) []string {
		return []string{"--server", apiAddr, "--ca-file", filepath.Join(pkiDir, "ca.crt"),
			"--cert-file", filepath.Join(pkiDir, name+".crt"), "--key-file", filepath.Join(pkiDir, name+".key"), "--log-level", "warn"}
	}
	cmMetrics, _ := procfs.FreeAddr()
	cm, err := start("controller-manager", filepath.Join(o.binDir, "controller-manager"), logs,
		append(creds("controller-manager"), "--metrics-listen", cmMetrics, "--cluster-cidr", "10.128.0.0/9", "--large-cluster-size-threshold", "50")...)
	if err != nil {
		return nil, err
	}
	procs = append(procs, cm)
	schedMetrics, _ := procfs.FreeAddr()
	sched, err := start("scheduler", filepath.Join(o.binDir, "scheduler"), logs, append(creds("scheduler"), "--metrics-listen", schedMetrics)...)
	if err != nil {
		return nil, err
	}
	procs = append(procs, sched)

	r := &result{nodes: o.nodes, pods: o.nodes * o.podsPerNode, cpu: map[string]float64{}, peakRSS: map[string]int64{}}
	r.pods -= r.pods % o.deploymentSize
	// The hollow process's own floor: RSS with one node, for the per-node
	// figure's baseline.
	hollowArgs := func(n int, prefix, metrics string) []string {
		return []string{"--server", apiAddr, "--ca-file", filepath.Join(pkiDir, "ca.crt"), "--ca-key-file", filepath.Join(pkiDir, "ca.key"),
			"--nodes", strconv.Itoa(n), "--name-prefix", prefix, "--root-dir", filepath.Join(o.workDir, "nodes"), "--log-level", "warn",
			"--metrics-listen", metrics}
	}
	t0 := time.Now()
	hollowMetrics, _ := procfs.FreeAddr()
	hp, err := start("hollow", filepath.Join(o.binDir, "hollow"), logs, hollowArgs(o.nodes, hollow.DefaultNamePrefix, hollowMetrics)...)
	if err != nil {
		return nil, err
	}
	procs = append(procs, hp)
	nodeAPI := client.For[*v1.Node](c)
	if err := waitFor(ctx, o.timeout, procs, func() error {
		ns, _, err := nodeAPI.List(ctx, client.ListOptions{LabelSelector: hollow.LabelHollow + "=true"})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range ns {
			if conditionTrue(n.GetStatus().GetConditions(), "Ready") && n.GetSpec().GetPodCidr() != "" {
				ready++
			}
		}
		if ready < o.nodes {
			return fmt.Errorf("%d of %d nodes Ready", ready, o.nodes)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	r.nodesReady = time.Since(t0)
	log.Info("nodes Ready; idling before reading the hollow process's RSS", "nodes", o.nodes, "after", r.nodesReady.Round(time.Millisecond), "idle", o.idle)
	time.Sleep(o.idle)
	r.idleRSS = procfs.RSS(hp.Pid())
	r.idleHeap, r.idleStacks, r.goroutines = goStats(ctx, hollowMetrics)
	if o.profile != "" {
		for name, url := range map[string]string{"heap": "/debug/pprof/heap", "goroutines": "/debug/pprof/goroutine?debug=1"} {
			path := filepath.Join(o.profile, fmt.Sprintf("hollow-%s-%d.pprof", name, o.nodes))
			if err := saveURL(ctx, path, "http://"+hollowMetrics+url); err != nil {
				log.Warn("profile", "of", name, "err", err)
			} else {
				log.Info("profile of the hollow process at idle", "of", name, "path", path)
			}
		}
	}
	baseMetrics, _ := procfs.FreeAddr()
	base, err := start("hollow-baseline", filepath.Join(o.binDir, "hollow"), logs, hollowArgs(1, "density-baseline-", baseMetrics)...)
	if err == nil {
		time.Sleep(o.idle)
		r.idleBaseline = procfs.RSS(base.Pid())
		r.idleHeapBaseline, r.idleStacksBase, r.goroutinesBase = goStats(ctx, baseMetrics)
		base.Stop(stopGrace)
	}
	if o.idleOnly {
		return r, nil
	}
	// The idle figures now, in case the load phase fails.
	r.printIdle(os.Stdout)

	// Pod startup latency: creationTimestamp -> Running, as a watch sees it.
	podAPI := client.For[*v1.Pod](c)
	w, err := podAPI.Watch(ctx, client.WatchOptions{Namespace: "default", LabelSelector: "density"})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var mu sync.Mutex
	running := map[string]bool{}
	allRunning := make(chan struct{})
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			p := ev.Object
			if ev.Type == "BOOKMARK" || p.GetStatus().GetPhase() != "Running" {
				continue
			}
			seen := time.Now()
			mu.Lock()
			if uid := p.GetMetadata().GetUid(); !running[uid] {
				running[uid] = true
				r.startup = append(r.startup, seen.Sub(p.GetMetadata().GetCreationTimestamp().AsTime()))
				r.startupAt = append(r.startupAt, seen.Sub(r.loadStart))
				if len(running) == r.pods {
					close(allRunning)
				}
			}
			mu.Unlock()
		}
	}()

	// Beside the load, until every pod is gone: the watch probe, the
	// leader Leases' renewals, RSS and etcd's db size over time.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var side sync.WaitGroup
	probe := newWatchProbe(c)
	probeErr := make(chan error, 1)
	var smp sampler
	var lw leaseWatch
	side.Add(3)
	go func() { defer side.Done(); probeErr <- probe.run(loadCtx) }()
	go func() { defer side.Done(); smp.run(loadCtx, c, procs) }()
	go func() { defer side.Done(); lw.run(loadCtx, c) }()
	stopSide := func() {
		stopLoad()
		side.Wait()
	}
	defer stopSide()

	for _, p := range procs {
		r.cpu[p.Name] = -cpuSeconds(p)
	}
	deps := client.For[*v1.Deployment](c)
	n := r.pods / o.deploymentSize
	every := time.Duration(float64(time.Second) * float64(o.deploymentSize) / float64(o.rate))
	tc := time.Now()
	mu.Lock()
	r.loadStart = tc
	mu.Unlock()
	log.Info("creating Deployments", "deployments", n, "replicas", o.deploymentSize, "every", every)
	for i := range n {
		if _, err := deps.Create(ctx, deployment(fmt.Sprintf("density-%d", i), int32(o.deploymentSize))); err != nil {
			return nil, err
		}
		if i < n-1 {
			time.Sleep(time.Until(tc.Add(time.Duration(i+1) * every)))
		}
	}
	r.createSpan = time.Since(tc)
	// Until every pod is Running, a component exits (the scheduler and
	// the controller-manager exit when they lose their leader lease, as
	// Kubernetes' do: on an overloaded apiserver, the lease renewal's
	// deadline can pass) or the timeout passes.
	if err := waitFor(ctx, o.timeout, procs, func() error {
		select {
		case <-allRunning:
			return nil
		default:
		}
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("only %d of %d pods Running", len(running), r.pods)
	}); err != nil {
		return nil, err
	}
	r.allRunning = time.Since(tc)
	log.Info("every pod Running; deleting the Deployments", "after", r.allRunning.Round(time.Millisecond))
	td := time.Now()
	for i := range n {
		if _, err := deps.Delete(ctx, "default", fmt.Sprintf("density-%d", i), client.DeleteOptions{}); err != nil {
			return nil, err
		}
	}
	if err := waitFor(ctx, o.timeout, procs, func() error {
		ps, _, err := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "density"})
		if err != nil {
			return err
		}
		if len(ps) > 0 {
			return fmt.Errorf("%d pods left", len(ps))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	r.deleteAll = time.Since(td)
	stopSide()
	if err := <-probeErr; err != nil {
		return nil, err
	}
	r.watch = probe.result(tc)
	r.leases = lw.result()
	r.dbSize, r.dbErr, r.rss = smp.dbSize, smp.dbErr, smp.rss
	for _, e := range []struct{ name, addr string }{{"controller-manager", cmMetrics}, {"scheduler", schedMetrics}, {"hollow", hollowMetrics}} {
		r.events = append(r.events, readEventDrops(ctx, e.name, e.addr))
	}
	for _, p := range procs {
		r.order = append(r.order, p.Name)
		r.cpu[p.Name] += cpuSeconds(p)
		r.peakRSS[p.Name] = peak(p)
	}
	m, err := promtext.Scrape(ctx, nil, "http://"+apiMetrics+"/metrics")
	if err != nil {
		return nil, err
	}
	// Per kind and verb, but Watch, whose duration is the stream's.
	for _, g := range m.Groups("tugboat_apiserver_request_duration_seconds", 0.99, "kind", "verb") {
		if g.Labels["verb"] != "Watch" && g.Count > 0 {
			r.apiP99 = append(r.apiP99, apiLatency{kind: g.Labels["kind"], verb: g.Labels["verb"], count: g.Count, p99: g.Value})
		}
	}
	sortLatencies(r.apiP99)
	return r, nil
}

func conditionTrue(cs []*v1.Condition, typ string) bool {
	for _, c := range cs {
		if c.GetType() == typ {
			return c.GetStatus() == "True"
		}
	}
	return false
}

func deployment(name string, replicas int32) *v1.Deployment {
	lbl := map[string]string{"app": name, "density": "true"}
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec: &v1.PodSpec{
					Containers: []*v1.Container{{
						Name: "main", Image: "busybox", Command: []string{"sleep", "3600"},
						Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "10m", "memory": "16Mi"}},
					}}},
			},
		},
	}
}

// waitFor polls cond every 500ms until it holds, a process exits or
// timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, procs []*proc, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		for _, p := range procs {
			if e := p.Exited(); e != nil {
				return e
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func (r *result) print(w io.Writer, o options) {
	fmt.Fprintf(w, "\n== density: %d hollow nodes, %d pods (%d per node), Deployments of %d created at %d pods/s\n", r.nodes, r.pods, o.podsPerNode, o.deploymentSize, o.rate)
	fmt.Fprintf(w, "apiserver --max-requests-inflight %d; nodes Ready %s after the hollow process started\n", o.maxInflight, r.nodesReady.Round(time.Millisecond))
	r.printIdle(w)
	if o.idleOnly {
		return
	}
	fmt.Fprintf(w, "Deployments created over %s; every pod Running %s after the first create (%.0f pods/s)\n",
		r.createSpan.Round(time.Millisecond), r.allRunning.Round(time.Millisecond), float64(r.pods)/r.allRunning.Seconds())
	r.printLoad(w)
}

// printIdle prints the hollow process's figures at idle.
func (r *result) printIdle(w io.Writer) {
	per := float64(r.idleRSS-r.idleBaseline) / float64(r.nodes) / 1024
	fmt.Fprintf(w, "hollow process at idle: RSS %s for %d nodes = %.0f KiB per node (%.0f KiB per node over a 1-node process's %s; target <= 200 KiB)\n",
		mib(r.idleRSS), r.nodes, float64(r.idleRSS)/float64(r.nodes)/1024, per, mib(r.idleBaseline))
	fmt.Fprintf(w, "  Go heap in use %s = %.0f KiB per node over the 1-node process's %s; goroutines %.0f = %.1f per node over its %.0f\n",
		mib(int64(r.idleHeap)), (r.idleHeap-r.idleHeapBaseline)/float64(r.nodes)/1024, mib(int64(r.idleHeapBaseline)),
		r.goroutines, (r.goroutines-r.goroutinesBase)/float64(r.nodes), r.goroutinesBase)
	fmt.Fprintf(w, "  goroutine stacks in use %s = %.0f KiB per node over the 1-node process's %s; the rest of the RSS is heap not in use (GC headroom, not yet returned) and the runtime's own\n",
		mib(int64(r.idleStacks)), (r.idleStacks-r.idleStacksBase)/float64(r.nodes)/1024, mib(int64(r.idleStacksBase)))
}

// printLoad prints what the load phase measured.
func (r *result) printLoad(w io.Writer) {
	fmt.Fprintf(w, "pod startup latency (create -> Running seen by a watch): p50 %s p90 %s p99 %s (target p99 <= 5s)\n",
		stats.Percentile(r.startup, 50), stats.Percentile(r.startup, 90), stats.Percentile(r.startup, 99))
	fmt.Fprintf(w, "every pod gone %s after the Deployments were deleted\n", r.deleteAll.Round(time.Millisecond))
	fmt.Fprintf(w, "API call latency p99 by kind and verb (calls):\n")
	for _, l := range r.apiP99 {
		fmt.Fprintf(w, "  %-22s %-14s %8.0f  %s\n", l.kind, l.verb, l.count, time.Duration(l.p99*float64(time.Second)).Round(10*time.Microsecond))
	}
	l := r.watch
	fmt.Fprintf(w, "watch delivery lag (the bench's probe pod rewritten every %s during the load; %d writes, %d never seen by its watch, %d failed):\n", probeEvery, l.writes, l.unseen, l.errs)
	fmt.Fprintf(w, "  from the write's reply (lower bound):   p50 %s p99 %s\n", stats.Percentile(l.fromReply, 50), stats.Percentile(l.fromReply, 99))
	fmt.Fprintf(w, "  from the write's request (upper bound): p50 %s p99 %s\n", stats.Percentile(l.fromRequest, 50), stats.Percentile(l.fromRequest, 99))
	mean, peakRate := writeRate(l.revs)
	fmt.Fprintf(w, "etcd: write rate %.0f revisions/s over the load (peak %.0f/s over 5 s)", mean, peakRate)
	if len(r.dbSize) > 0 {
		top := 0.0
		for _, s := range r.dbSize {
			top = max(top, s.v)
		}
		fmt.Fprintf(w, "; db size %s at the first create, peak %s, %s at the end\n", mib(int64(r.dbSize[0].v)), mib(int64(top)), mib(int64(r.dbSize[len(r.dbSize)-1].v)))
	} else {
		fmt.Fprintf(w, "; db size not read: %v\n", r.dbErr)
	}
	fmt.Fprintf(w, "leader Leases (renewTime gaps written by the holder; renewTime -> seen by the bench's watch):\n")
	for _, ls := range r.leases {
		fmt.Fprintf(w, "  %-20s %5d renewals, largest gap %s (RenewDeadline 10s), p99 lag %s\n", ls.name, ls.renewals, ls.maxGap.Round(time.Millisecond), ls.p99Lag)
	}
	fmt.Fprintf(w, "event recorders over the run (recorded, dropped because the queues were full):\n")
	for _, e := range r.events {
		if e.err != nil {
			fmt.Fprintf(w, "  %-20s not read: %v\n", e.component, e.err)
			continue
		}
		rate := 0.0
		if e.recorded > 0 {
			rate = 100 * e.dropped / e.recorded
		}
		fmt.Fprintf(w, "  %-20s %8.0f recorded %8.0f dropped (%.2f %%)\n", e.component, e.recorded, e.dropped, rate)
	}
	fmt.Fprintf(w, "CPU seconds during the load (create to all gone) and peak RSS:\n")
	for _, name := range r.order {
		fmt.Fprintf(w, "  %-20s %7.1f s  %s\n", name, r.cpu[name], mib(r.peakRSS[name]))
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func sortLatencies(ls []apiLatency) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].kind != ls[j].kind {
			return ls[i].kind < ls[j].kind
		}
		return ls[i].verb < ls[j].verb
	})
}
