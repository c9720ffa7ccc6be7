package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	procfs "github.com/tugboat/tugboat/hack/bench/internal/proc"
	"github.com/tugboat/tugboat/internal/promtext"
)

// result is one run's measurements.
type result struct {
	nodes, pods    int
	workload       string
	createPods     time.Duration
	wall           time.Duration // scheduler start -> every pod bound
	firstBind      time.Duration // scheduler start -> first bind
	samples        []float64     // pods bound in each second since the scheduler started
	decisionP50    float64
	decisionP99    float64
	e2eP50, e2eP99 float64
	cpuScheduler   float64 // CPU seconds while scheduling
	cpuAPIServer   float64
	rssScheduler   float64 // MiB at the end
	peakScheduler  float64
	rssAPIServer   float64
	peakAPIServer  float64
	conflicts      float64
	unschedulable  float64
	bindP50        float64
	bindP99        float64
	eventsDropped  float64
	eventsWritten  int           // Scheduled occurrences stored (sum of counts)
	eventsObjects  int           // Scheduled Event objects stored
	eventsDrained  time.Duration // scheduler start -> the recorder's queues empty
}

func runOnce(ctx context.Context, o options, nodes int, log *slog.Logger) (*result, error) {
	dir := filepath.Join(o.workDir, fmt.Sprintf("nodes-%d", nodes))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	apiAddr, err := procfs.FreeAddr()
	if err != nil {
		return nil, err
	}
	apiMetrics, _ := procfs.FreeAddr()
	schedMetrics, _ := procfs.FreeAddr()
	// As a real cluster runs (and the density benchmark): TLS with client
	// certificates, RBAC and the node authorizer; the scheduler is
	// system:kube-scheduler. -insecure turns all of it off.
	pkiDir := filepath.Join(dir, "pki")
	apiArgs := []string{"--listen", apiAddr, "--kube-listen", "", "--metrics-listen", apiMetrics, "--data-dir", filepath.Join(dir, "etcd"), "--log-level", "warn"}
	schedArgs := []string{"--server", apiAddr}
	ccfg := client.Config{Server: apiAddr, UserAgent: "scheduler-bench"}
	if o.insecure {
		apiArgs = append(apiArgs, "--insecure")
	} else {
		if err := pki.Init(pki.InitOptions{Dir: pkiDir}); err != nil {
			return nil, err
		}
		apiArgs = append(apiArgs, "--pki-dir", pkiDir)
		schedArgs = append(schedArgs, "--ca-file", filepath.Join(pkiDir, "ca.crt"),
			"--cert-file", filepath.Join(pkiDir, "scheduler.crt"), "--key-file", filepath.Join(pkiDir, "scheduler.key"))
		if ccfg.TLS, err = client.TLSFromFiles(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key")); err != nil {
			return nil, err
		}
	}
	api, err := start("apiserver", filepath.Join(o.binDir, "apiserver"), filepath.Join(dir, "apiserver.log"), nil, apiArgs...)
	if err != nil {
		return nil, err
	}
	defer api.Stop(stopGrace)
	c, err := client.New(ccfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := waitReady(ctx, c, api); err != nil {
		return nil, err
	}
	log.Info("creating load", "nodes", nodes, "pods", o.pods)
	r := &result{nodes: nodes, pods: o.pods, workload: o.workload}
	if r.createPods, err = createLoad(ctx, c, nodes, o.pods, o.workload); err != nil {
		return nil, err
	}
	apiCPU0, err := api.CPUSeconds()
	if err != nil {
		return nil, err
	}
	args := append(append(schedArgs, "--metrics-listen", schedMetrics, "--log-level", "warn"), o.schedulerArgs...)
	t0 := time.Now()
	sched, err := start("scheduler", filepath.Join(o.binDir, "scheduler"), filepath.Join(dir, "scheduler.log"), o.schedulerEnv, args...)
	if err != nil {
		return nil, err
	}
	defer sched.Stop(stopGrace)
	log.Info("scheduler started", "nodes", nodes)
	profiled := make(chan struct{})
	startProfile := func() {
		if o.profile == "" {
			close(profiled)
			return
		}
		go func() { defer close(profiled); profile(o.profile, nodes, apiMetrics, schedMetrics, log) }()
	}
	if err := r.watch(ctx, o, sched, api, schedMetrics, t0, startProfile); err != nil {
		return nil, err
	}
	r.wall = time.Since(t0)
	// The recorder writes the Scheduled events behind the binds: wait for
	// it to drain (its pending gauge at 0), so CPU and the events written
	// include them.
	if err := r.waitEvents(ctx, sched, schedMetrics, o.timeout); err != nil {
		return nil, err
	}
	r.eventsDrained = time.Since(t0)
	<-profiled
	if o.profile != "" {
		saveURL(filepath.Join(o.profile, fmt.Sprintf("scheduler-heap-%d.pprof", nodes)), "http://"+schedMetrics+"/debug/pprof/heap", log)
	}
	schedCPU, _ := sched.CPUSeconds()
	apiCPU1, _ := api.CPUSeconds()
	r.cpuScheduler, r.cpuAPIServer = schedCPU, apiCPU1-apiCPU0
	r.rssScheduler, r.peakScheduler, _ = memory(sched)
	r.rssAPIServer, r.peakAPIServer, _ = memory(api)
	m, err := promtext.Scrape(ctx, nil, "http://"+schedMetrics+"/metrics")
	if err != nil {
		return nil, err
	}
	r.decisionP50 = m.Quantile("tugboat_scheduler_decision_duration_seconds", 0.5)
	r.decisionP99 = m.Quantile("tugboat_scheduler_decision_duration_seconds", 0.99)
	r.e2eP50 = m.Quantile("tugboat_scheduler_e2e_scheduling_duration_seconds", 0.5)
	r.e2eP99 = m.Quantile("tugboat_scheduler_e2e_scheduling_duration_seconds", 0.99)
	r.bindP50 = m.Quantile("tugboat_scheduler_bind_duration_seconds", 0.5)
	r.bindP99 = m.Quantile("tugboat_scheduler_bind_duration_seconds", 0.99)
	r.eventsDropped, _ = m.Sum("tugboat_events_dropped_total")
	if r.eventsWritten, r.eventsObjects, err = scheduledEvents(ctx, c); err != nil {
		return nil, err
	}
	r.conflicts, _ = m.Sum("tugboat_scheduler_binds_total", "result", "conflict")
	r.unschedulable, _ = m.Sum("tugboat_scheduler_schedule_attempts_total", "result", "unschedulable")
	if err := verify(ctx, c, o.pods); err != nil {
		return nil, fmt.Errorf("verification: %w", err)
	}
	return r, nil
}

func waitReady(ctx context.Context, c *client.Client, api *proc) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := client.For[*v1.Namespace](c).Get(cctx, "", "default")
		cancel()
		if err == nil {
			return nil
		}
		if e := api.Exited(); e != nil {
			return e
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("apiserver not ready after 60s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// watch samples the scheduler's successful binds every second until all
// pods are bound; it calls firstBind once, at the first bind.
func (r *result) watch(ctx context.Context, o options, sched, api *proc, addr string, t0 time.Time, firstBind func()) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	poll := time.NewTicker(100 * time.Millisecond)
	defer poll.Stop()
	deadline := t0.Add(o.timeout)
	var last float64
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		case <-tick.C:
		}
		if err := sched.Exited(); err != nil {
			return err
		}
		if err := api.Exited(); err != nil {
			return err
		}
		m, err := promtext.Scrape(ctx, nil, "http://"+addr+"/metrics")
		if err != nil {
			if time.Now().After(deadline) {
				return err
			}
			continue // not listening yet
		}
		bound, _ := m.Sum("tugboat_scheduler_binds_total", "result", "ok")
		if bound > 0 && r.firstBind == 0 {
			r.firstBind = time.Since(t0)
			firstBind()
		}
		// One sample per whole second since start.
		for sec := int(time.Since(t0) / time.Second); len(r.samples) < sec; {
			r.samples = append(r.samples, bound-last)
			last = bound
		}
		if int(bound) >= r.pods {
			r.samples = append(r.samples, bound-last) // the last, partial second
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %v of %d pods bound after %v", bound, r.pods, o.timeout)
		}
	}
}

// waitEvents waits until the scheduler's recorder has written what it
// queued (tugboat_events_pending 0).
func (r *result) waitEvents(ctx context.Context, sched *proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		m, err := promtext.Scrape(ctx, nil, "http://"+addr+"/metrics")
		if err != nil {
			return err
		}
		if p, _ := m.Sum("tugboat_events_pending"); p == 0 {
			return nil
		}
		if err := sched.Exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the scheduler's recorder still holds events after %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scheduledEvents counts the Scheduled events stored in the pods'
// namespace: occurrences (counts summed) and objects.
func scheduledEvents(ctx context.Context, c *client.Client) (occurrences, objects int, err error) {
	evs, _, err := client.For[*v1.Event](c).List(ctx, client.ListOptions{Namespace: "default", Limit: 1000})
	if err != nil {
		return 0, 0, err
	}
	for _, e := range evs {
		if e.GetReason() == "Scheduled" {
			occurrences += int(max(e.GetCount(), 1))
			objects++
		}
	}
	return occurrences, objects, nil
}

// profile saves 4s CPU profiles of both processes, from the first bind
// (the scheduler's own start, listing the pods and nodes, is not in it).
func profile(dir string, nodes int, apiMetrics, schedMetrics string, log *slog.Logger) {
	_ = os.MkdirAll(dir, 0o755)
	done := make(chan struct{}, 2)
	for name, addr := range map[string]string{"apiserver": apiMetrics, "scheduler": schedMetrics} {
		go func() {
			defer func() { done <- struct{}{} }()
			path := filepath.Join(dir, fmt.Sprintf("%s-%d.pprof", name, nodes))
			resp, err := http.Get("http://" + addr + "/debug/pprof/profile?seconds=4")
			if err != nil {
				log.Warn("profile", "process", name, "err", err)
				return
			}
			defer resp.Body.Close()
			f, err := os.Create(path)
			if err != nil {
				return
			}
			defer f.Close()
			_, _ = io.Copy(f, resp.Body)
			log.Info("profile written", "path", path)
		}()
	}
	<-done
	<-done
}

func saveURL(path, url string, log *slog.Logger) {
	resp, err := http.Get(url)
	if err != nil {
		log.Warn("fetching", "url", url, "err", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = io.Copy(f, resp.Body)
}

func (r *result) print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: %d nodes, %d pods (created in %v before the scheduler started)\n", r.workload, r.nodes, r.pods, r.createPods.Round(time.Millisecond))
	fmt.Fprintf(w, "all bound %v after the scheduler started; first bind after %v\n", r.wall.Round(time.Millisecond), r.firstBind.Round(time.Millisecond))
	fmt.Fprintf(w, "throughput: %.0f pods/s from scheduler start, %.0f pods/s from the first bind\n",
		float64(r.pods)/r.wall.Seconds(), float64(r.pods)/(r.wall-r.firstBind).Seconds())
	var s []string
	for _, v := range r.samples {
		s = append(s, fmt.Sprintf("%.0f", v))
	}
	fmt.Fprintf(w, "per-second samples: %s\n", strings.Join(s, " "))
	fmt.Fprintf(w, "decision latency p50 %s p99 %s; queue->bound p50 %s p99 %s\n", dur(r.decisionP50), dur(r.decisionP99), dur(r.e2eP50), dur(r.e2eP99))
	fmt.Fprintf(w, "bind call latency p50 %s p99 %s\n", dur(r.bindP50), dur(r.bindP99))
	fmt.Fprintf(w, "Scheduled events: %d stored (%d objects), %.0f dropped by the recorder; its queues empty %v after the scheduler started\n",
		r.eventsWritten, r.eventsObjects, r.eventsDropped, r.eventsDrained.Round(time.Millisecond))
	fmt.Fprintf(w, "CPU per pod: scheduler %.0f µs, apiserver+etcd %.0f µs (%.1f s and %.1f s in total)\n",
		r.cpuScheduler/float64(r.pods)*1e6, r.cpuAPIServer/float64(r.pods)*1e6, r.cpuScheduler, r.cpuAPIServer)
	fmt.Fprintf(w, "RSS: scheduler %.0f MiB (peak %.0f), apiserver+etcd %.0f MiB (peak %.0f)\n", r.rssScheduler, r.peakScheduler, r.rssAPIServer, r.peakAPIServer)
	fmt.Fprintf(w, "bind conflicts %.0f, unschedulable attempts %.0f; verified: every pod bound, no node overcommitted\n", r.conflicts, r.unschedulable)
}

func printSummary(w io.Writer, o options, rs []*result) {
	fmt.Fprintf(w, "\n| nodes | pods/s (from start) | pods/s (from first bind) | decision p50 | decision p99 | sched CPU/pod | apiserver CPU/pod | events stored/dropped | sched RSS peak | apiserver RSS peak |\n")
	fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %s | %s | %.0f µs | %.0f µs | %d / %.0f | %.0f MiB | %.0f MiB |\n", r.nodes,
			float64(r.pods)/r.wall.Seconds(), float64(r.pods)/(r.wall-r.firstBind).Seconds(), dur(r.decisionP50), dur(r.decisionP99),
			r.cpuScheduler/float64(r.pods)*1e6, r.cpuAPIServer/float64(r.pods)*1e6, r.eventsWritten, r.eventsDropped, r.peakScheduler, r.peakAPIServer)
	}
	_ = o
}

func dur(sec float64) string {
	if math.IsNaN(sec) {
		return "n/a"
	}
	return time.Duration(sec * float64(time.Second)).Round(time.Microsecond).String()
}
