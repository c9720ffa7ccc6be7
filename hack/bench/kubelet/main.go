// Command kubelet benchmarks the kubelet on a one-node test cluster
// (e2e/cluster: real apiserver, containerd, runc, CNI plugins), image
// already on the node:
//
//   - apply -> Running (as seen by a watch) for one pod, -runs times;
//   - 30 pods created at once until all are Running;
//   - the same work done by a plain shell script with containerd's ctr and
//     the CNI plugins (netns, CNI ADD, ctr run -d), the floor, in the same
//     run and the same node namespace;
//   - with -runtime cri, the CRI floor: the same pods made by `crictl run`
//     (RunPodSandbox, CreateContainer, StartContainer) on the node's
//     containerd, all at once (crifloor.go) — a pause and a busybox
//     container per pod, as the kubelet asks for;
//   - per burst, when the first and the last container started (the
//     runtime's clock, from the pods' status) against when the watch saw
//     the last pod Running;
//   - the kubelet's RSS with 30 pods, its CPU time, and a CPU profile of
//     the 30-pod burst (top functions printed; the profile is kept);
//   - with -trace, a timeline of each pod's steps, from the kubelet's
//     debug log (trace.go): for the single pods and for each burst.
//
// Pods are bound by spec.nodeName (no scheduler), so the numbers are the
// kubelet's. Run as root: go run ./hack/bench/kubelet
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/hack/bench/internal/proc"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

const ns = "bench"

func main() {
	runs := flag.Int("runs", 20, "single-pod runs")
	burst := flag.Int("burst", 30, "pods created at once")
	rounds := flag.Int("rounds", 3, "burst rounds (kubelet and floor alternate)")
	out := flag.String("out", "", "directory for the CPU profile and kubelet binary (default: a temp dir, kept)")
	verbose := flag.Bool("v", false, "log the cluster's setup")
	cniConf := flag.String("cni-conf", "", "an operator CNI config file to use instead of the kubelet's default (experiments; PODCIDR in it stands for the node's pod CIDR)")
	floorMasq := flag.Bool("floor-masq", true, "the floor's bridge plugin masquerades each pod (ipMasq); false: the floor's pods get no egress NAT at all")
	rt := flag.String("runtime", cluster.RuntimeCRI, "the kubelet's --runtime: cri (the node's own containerd with its CRI plugin) or containerd (native)")
	trace := flag.Bool("trace", false, "run the kubelet at --log-level debug and print each pod's steps from its log (the debug log costs the kubelet some CPU)")
	flag.Parse()
	if err := run(*runs, *burst, *rounds, *out, *cniConf, *rt, *floorMasq, *trace, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type bench struct {
	// scriptCPU is the CPU time of the last floor script run.
	scriptCPU time.Duration
	// crictlCPU is the CPU time of the crictl runs so far (the CRI
	// floor's), in nanoseconds.
	crictlCPU atomic.Int64
	// lastStart holds, per startAll, the offsets from the first create of
	// the first and the last container start (the runtime's clock, from
	// the pods' status) and of the watch seeing the last pod Running.
	lastStart [][3]time.Duration
	// lastPods is what the last startAll saw of each pod, by name, and
	// lastBegin when it made the first create.
	lastPods  map[string]podTimes
	lastBegin time.Time
	// floorMasq turns the bridge plugin's ipMasq on in the floor's config.
	floorMasq bool
	bins      *cluster.Binaries
	c         *cluster.Cluster
	node      *cluster.Node
	api       *client.Typed[*v1.Pod]
}

func run(runs, burst, rounds int, out, cniConf, rt string, floorMasq, trace, verbose bool) error {
	ctx := context.Background()
	if err := cluster.Check(); err != nil {
		return err
	}
	if out == "" {
		var err error
		if out, err = os.MkdirTemp("", "tugboat-bench-kubelet"); err != nil {
			return err
		}
	}
	bins, err := cluster.BuildBinaries(ctx, filepath.Join(out, "bin"))
	if err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	if verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	kubeletArgs := []string{"--log-level", "info", "--lease-interval", "10s", "--node-status-interval", "10s"}
	if trace {
		kubeletArgs = []string{"--log-level", "debug", "--log-format", "json", "--lease-interval", "10s", "--node-status-interval", "10s"}
	}
	c, err := cluster.New(ctx, cluster.Options{
		Binaries: bins, Nodes: 1, NoScheduler: true, NoControllerManager: true, Logger: log, Runtime: rt,
		LogDir:      filepath.Join(out, "logs"),
		KubeletArgs: kubeletArgs,
	})
	if err != nil {
		return err
	}
	defer c.Close()
	b := &bench{bins: bins, c: c, node: c.Nodes[0], api: client.For[*v1.Pod](c.Client), floorMasq: floorMasq}
	if _, err := client.For[*v1.Namespace](c.Client).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	if cniConf != "" {
		data, err := os.ReadFile(cniConf)
		if err != nil {
			return err
		}
		// PODCIDR in the file stands for the node's pod CIDR.
		data = []byte(strings.ReplaceAll(string(data), "PODCIDR", b.node.PodCIDR.String()))
		// Sorted before the kubelet's 10-tugboat.conflist, so it wins.
		if err := os.WriteFile(filepath.Join(b.node.CNIConfDir, "05-"+filepath.Base(cniConf)), data, 0o644); err != nil {
			return err
		}
		fmt.Printf("CNI config: %s\n", cniConf)
	}
	fmt.Printf("kubelet benchmark: 1 node, %s, runtime %s, image present, pods bound by spec.nodeName; floor ipMasq %t\n", c.ID, c.Runtime, floorMasq)

	// Warm up (first pull attempt, caches), not measured.
	if _, err := b.startAll(ctx, 1, "warm"); err != nil {
		return err
	}
	if err := b.deleteAll(ctx); err != nil {
		return err
	}

	floor, floorCleanupAll, err := b.floorEnv(ctx)
	if err != nil {
		return err
	}
	defer floorCleanupAll()

	// Single pods, kubelet and floor interleaved so both see the same
	// background load.
	var single, floorOne []time.Duration
	traceOne := traceRows{}
	for i := 0; i < runs; i++ {
		at := logSize(b.node.LogPath)
		d, err := b.startAll(ctx, 1, fmt.Sprintf("one-%02d", i))
		if err != nil {
			return err
		}
		single = append(single, d)
		if trace {
			if err := b.trace(traceOne, at); err != nil {
				return err
			}
		}
		if err := b.deleteAll(ctx); err != nil {
			return err
		}
		idx := 1000 + i
		if d, err = floor(floorScript, idx, idx); err != nil {
			return err
		}
		floorOne = append(floorOne, d)
		if _, err := floor(floorCleanup, idx, idx); err != nil {
			return err
		}
	}

	// Bursts, alternating; the first kubelet burst is profiled.
	pid := b.node.PID()
	metricsURL := "http://" + b.node.MetricsAddr + "/metrics"
	var bursts, floorBursts, criFloorBursts []time.Duration
	criFloorDir := filepath.Join(out, "crifloor")
	withCRIFloor := c.Runtime == cluster.RuntimeCRI
	var rss int64
	var kubeletCPU time.Duration
	var before, after map[string][2]float64
	profile := filepath.Join(out, "kubelet-burst.pprof")
	var burstCPU, floorCPU, criFloorCPU cpuSnapshot
	for r := 0; r < rounds; r++ {
		cpu0 := procCPU(pid)
		snap := b.cpu()
		var profDone chan error
		if r == 0 {
			if before, err = histograms(metricsURL); err != nil {
				return err
			}
			profDone = make(chan error, 1)
			go func() {
				profDone <- fetchProfile("http://"+b.node.MetricsAddr+"/debug/pprof/profile?seconds=6", profile)
			}()
			time.Sleep(100 * time.Millisecond) // let the profile start before the burst
		}
		at := logSize(b.node.LogPath)
		d, err := b.startAll(ctx, burst, fmt.Sprintf("burst%d", r))
		if err != nil {
			return err
		}
		bursts = append(bursts, d)
		split := b.lastStart[len(b.lastStart)-1]
		fmt.Printf("burst %d: first container started %s after the first create, last %s, last seen Running %s\n", r,
			split[0].Round(time.Millisecond), split[1].Round(time.Millisecond), split[2].Round(time.Millisecond))
		if trace {
			rows := traceRows{}
			if err := b.trace(rows, at); err != nil {
				return err
			}
			rows.print(fmt.Sprintf("trace of burst %d, %d pods", r, burst))
		}
		if r == 0 {
			burstCPU = b.cpu().minus(snap)
			kubeletCPU = procCPU(pid) - cpu0
			rss = proc.RSS(pid)
			if after, err = histograms(metricsURL); err != nil {
				return err
			}
			if err := <-profDone; err != nil {
				fmt.Fprintln(os.Stderr, "profile:", err)
			}
		}
		if err := b.deleteAll(ctx); err != nil {
			return err
		}
		first := 2000 + 100*r
		snap = b.cpu()
		if d, err = floor(floorScript, first, first+burst-1); err != nil {
			return err
		}
		if r == 0 {
			floorCPU = b.cpu().minus(snap)
			delete(floorCPU, "kubelet")
			delete(floorCPU, "apiserver")
			floorCPU["script"] = b.scriptCPU
		}
		floorBursts = append(floorBursts, d)
		if _, err := floor(floorCleanup, first, first+burst-1); err != nil {
			return err
		}
		if !withCRIFloor {
			continue
		}
		snap = b.cpu()
		crictl0 := b.crictlCPU.Load()
		if d, err = b.criFloor(ctx, criFloorDir, first, first+burst-1); err != nil {
			return err
		}
		if r == 0 {
			criFloorCPU = b.cpu().minus(snap)
			delete(criFloorCPU, "kubelet")
			delete(criFloorCPU, "apiserver")
			criFloorCPU["crictl"] = time.Duration(b.crictlCPU.Load() - crictl0)
		}
		criFloorBursts = append(criFloorBursts, d)
		if err := b.criFloorCleanup(ctx); err != nil {
			return err
		}
	}
	burstTime, floorBurst := median(bursts), median(floorBursts)

	fmt.Printf("\n%-44s %10s %10s %10s %10s\n", "", "p50", "p99", "min", "max")
	printStats("kubelet: one pod, apply -> Running (watch)", single)
	printStats("floor script: one pod (netns+CNI+ctr run)", floorOne)
	if trace {
		traceOne.print(fmt.Sprintf("trace of the %d single pods", runs))
	}
	fmt.Printf("\n%d pods at once, median of %d rounds (each round: kubelet, then floor, then under CRI crictl):\n", burst, rounds)
	fmt.Printf("%-44s %10s   rounds %v\n", "kubelet: all Running (watch)", burstTime.Round(time.Millisecond), roundAll(bursts))
	fmt.Printf("%-44s %10s   rounds %v\n", "floor script", floorBurst.Round(time.Millisecond), roundAll(floorBursts))
	if withCRIFloor {
		fmt.Printf("%-44s %10s   rounds %v\n", "CRI floor: crictl run, all at once", median(criFloorBursts).Round(time.Millisecond), roundAll(criFloorBursts))
	}
	fmt.Printf("\nkubelet RSS with %d pods: %.1f MiB; kubelet CPU for the first burst: %s (%s per pod)\n",
		burst, float64(rss)/(1<<20), kubeletCPU.Round(time.Millisecond), (kubeletCPU / time.Duration(burst)).Round(time.Millisecond))
	fmt.Printf("CPU used by the first burst, kubelet: %s\n", burstCPU)
	fmt.Printf("CPU used by the first burst, floor:   %s\n", floorCPU)
	if withCRIFloor {
		fmt.Printf("CPU used by the first burst, CRI floor: %s\n", criFloorCPU)
	}
	printBreakdown(before, after)
	fmt.Printf("\nCPU profile of the burst: %s (go tool pprof %s %s)\n", profile, bins.Kubelet, profile)
	if top, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", bins.Kubelet, profile).Output(); err == nil {
		fmt.Printf("\n%s", top)
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

func printStats(name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	pct := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	fmt.Printf("%-44s %10s %10s %10s %10s\n", name, r(pct(0.5)), r(pct(0.99)), r(s[0]), r(s[len(s)-1]))
}

func benchPod(name, node string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: ns},
		Spec: &v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: proto.Int64(0),
			Containers: []*v1.Container{{
				Name:    "web",
				Image:   images.BusyboxRef,
				Command: []string{"httpd", "-f", "-p", "80"},
			}},
		},
	}
}

// startAll creates n pods at once and returns the time from the first
// create to the watch event that shows the last of them Running.
func (b *bench) startAll(ctx context.Context, n int, prefix string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	_, rv, err := b.api.List(ctx, client.ListOptions{Namespace: ns})
	if err != nil {
		return 0, err
	}
	w, err := b.api.Watch(ctx, client.WatchOptions{Namespace: ns, ResourceVersion: rv})
	if err != nil {
		return 0, err
	}
	defer w.Stop()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	created := make([]time.Time, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := b.api.Create(ctx, benchPod(fmt.Sprintf("%s-%02d", prefix, i), b.node.Name)); err != nil {
				errs <- err
			}
			created[i] = time.Now()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, err
	}
	up := map[string]bool{}
	pods := map[string]podTimes{}
	for i := range n {
		pods[fmt.Sprintf("%s-%02d", prefix, i)] = podTimes{created: created[i]}
	}
	var first, last time.Time
	for len(up) < n {
		ev, err := w.Next()
		if err != nil {
			return 0, fmt.Errorf("watch: %w (%d of %d running)", err, len(up), n)
		}
		if name := ev.Object.GetMetadata().GetName(); ev.Type == "MODIFIED" && isRunning(ev.Object) && !up[name] {
			up[name] = true
			pt := pods[name]
			pt.running = time.Now()
			pods[name] = pt
			for _, cs := range ev.Object.GetStatus().GetContainerStatuses() {
				t := cs.GetState().GetRunning().GetStartedAt().AsTime()
				if first.IsZero() || t.Before(first) {
					first = t
				}
				if t.After(last) {
					last = t
				}
			}
		}
	}
	took := time.Since(start)
	b.lastStart = append(b.lastStart, [3]time.Duration{first.Sub(start), last.Sub(start), took})
	b.lastPods, b.lastBegin = pods, start
	return took, nil
}

func isRunning(p *v1.Pod) bool {
	if p.GetStatus().GetPhase() != "Running" {
		return false
	}
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if cs.GetState().GetRunning() == nil {
			return false
		}
	}
	return true
}

// deleteAll deletes the namespace's pods and waits until the node runs no
// container.
func (b *bench) deleteAll(ctx context.Context) error {
	pods, _, err := b.api.List(ctx, client.ListOptions{Namespace: ns})
	if err != nil {
		return err
	}
	for _, p := range pods {
		if _, err := b.api.Delete(ctx, ns, p.Metadata.Name, client.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	rt, err := b.node.Runtime()
	if err != nil {
		return err
	}
	defer rt.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		sbs, err := rt.ListPodSandbox(ctx, runtime.SandboxFilter{})
		if err != nil {
			return err
		}
		left, _, err := b.api.List(ctx, client.ListOptions{Namespace: ns})
		if err != nil {
			return err
		}
		if len(sbs) == 0 && len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d sandboxes and %d pods left after deleting", len(sbs), len(left))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func fetchProfile(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}

// procCPU is the user+system CPU time of pid.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100
}

// procCPUWithChildren adds the CPU time of the reaped children of pid.
func procCPUWithChildren(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 15 {
		return 0
	}
	var sum int64
	for _, i := range []int{11, 12, 13, 14} {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		sum += v
	}
	return time.Duration(sum) * time.Second / 100
}

// trace adds the last startAll's pods, with their steps from the
// kubelet's log from offset at, to rows.
func (b *bench) trace(rows traceRows, at int64) error {
	steps, err := kubeletSteps(b.node.LogPath, at)
	if err != nil {
		return err
	}
	rows.add(b.lastBegin, b.lastPods, steps)
	return nil
}
