package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

const (
	benchNodes = 50
	benchPods  = 5000
	benchFlip  = 1000 // pods whose readiness a batch changes
)

// paintProbe runs in the page before its own script: on every frame it
// looks whether the console has drawn every pod (window.__console's
// renderedAt, set by the render that put the last chip in) and, one
// frame later — after that frame's style, layout and paint — records
// the time as window.__painted.
const paintProbe = `(() => {
	const tick = () => {
		const c = window.__console;
		if (c && c.renderedAt) { requestAnimationFrame(() => { window.__painted = performance.now(); }); return; }
		requestAnimationFrame(tick);
	};
	requestAnimationFrame(tick);
})();`

// BenchmarkClusterView5000Pods measures in the browser how long the
// cluster view takes to show 5,000 pods on 50 nodes: per op, a fresh
// page load until every chip is drawn and painted, against a console
// whose feed has every pod already (sync-ms, reported apart, is how
// long the console took from its start to a snapshot with every pod).
// It reports:
//
//   - load-ms: navigation start → the frame after the last chip (the
//     figure of issue 21's "< 2 s"), and its split by the page's marks:
//     fetch-ms (navigation → the snapshot's bytes in: page, script, the
//     first request, the feed), parse-ms (→ snapshot parsed and
//     applied), js-ms (the render that drew every chip), paint-ms (its
//     end → painted: style, layout, paint, and the wait for the frames);
//   - render-ms: the snapshot's arrival → every chip in the DOM, the
//     page's own measure;
//   - script-ms, layout-ms, style-ms, task-ms: the page's main thread's
//     CPU time in those (the Performance domain's thread-time metrics,
//     from the navigation to painted), i.e. the work apart from waiting
//     for a loaded machine's CPU;
//   - batch-render-ms: the longest redraw of one feed batch while 1,000
//     pods change readiness, i.e. whether the page stays responsive.
//
// The objects are made through an in-process apiserver's API (fake Node
// objects, pods bound to them with a Running status; no kubelets), so
// the benchmark needs no root.
func BenchmarkClusterView5000Pods(b *testing.B) {
	if _, err := chromiumPath(); err != nil {
		containerdtest.SkipOrFail(b, err)
	}
	srv := apiservertest.StartSecure(b)
	populate(b, srv.Client)
	start := time.Now()
	con := startConsole(b, certCreds(srv.Addr(), srv.PKIDir, "admin"), "--listen", "127.0.0.1:0")
	waitSynced(b, con.URL, benchPods)
	syncMs := ms(time.Since(start))
	br := newBrowser(b)
	br.run("install the paint probe and enable the Performance domain", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: paintProbe}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, performance.Enable, performance.EnableParams{TimeDomain: performance.EnableTimeDomainThreadTicks})
		return err
	}))
	var sum struct{ load, fetch, parse, js, paint, render, script, layout, style, task, batch float64 }
	ready, n := true, 0
	// b.Loop: the setup above runs once, however many iterations.
	for b.Loop() {
		n++
		b.StopTimer()
		br.run("a blank page", chromedp.Navigate("about:blank"))
		before := br.threadTimes()
		b.StartTimer()
		br.open(con.URL)
		br.waitFor("every pod drawn and painted", fmt.Sprintf(`(() => {
			const c = window.__console;
			if (!window.__painted) return "chips " + (c.chips ?? 0) + " of %d, snapshots " + c.snapshots;
			return c.chips >= %d ? "" : "chips " + c.chips;
		})()`, benchPods, benchPods), podTimeout)
		b.StopTimer()
		after := br.threadTimes()
		var m struct {
			Painted, FirstRender float64
			Marks                map[string]float64
		}
		br.value(`({Painted: window.__painted, FirstRender: window.__console.firstRenderMs, Marks: window.__console.marks})`, &m)
		sum.load += m.Painted
		sum.fetch += m.Marks["snapshotReceived"]
		sum.parse += m.Marks["snapshotApplied"] - m.Marks["snapshotReceived"]
		sum.js += m.Marks["renderEnd"] - m.Marks["renderStart"]
		sum.paint += m.Painted - m.Marks["renderEnd"]
		sum.render += m.FirstRender
		sum.script += after["ScriptDuration"] - before["ScriptDuration"]
		sum.layout += after["LayoutDuration"] - before["LayoutDuration"]
		sum.style += after["RecalcStyleDuration"] - before["RecalcStyleDuration"]
		sum.task += after["TaskDuration"] - before["TaskDuration"]
		if n == 1 {
			br.screenshot("5000-pods")
		}
		// One batch of readiness changes: the page redraws only the
		// chips that changed.
		if _, err := br.eval(`String(window.__console.maxBatchRenderMs = 0)`); err != nil {
			b.Fatal(err)
		}
		ready = !ready
		setReady(b, srv.Client, benchFlip, ready)
		want := "✓"
		if !ready {
			want = "◐"
		}
		br.waitFor("the changed chips redrawn", fmt.Sprintf(`(() => {
			const n = [...document.querySelectorAll('#nodes .chip[data-pod^="default/p-0"]')].filter((c) => c.textContent.startsWith(%q)).length;
			return n === %d ? "" : n + " chips %s";
		})()`, want, benchFlip, want), podTimeout)
		var batch float64
		br.value(`window.__console.maxBatchRenderMs || 0`, &batch)
		sum.batch += batch
		b.StartTimer()
	}
	avg := func(v float64) float64 { return v / float64(n) }
	b.ReportMetric(avg(sum.load), "load-ms")
	b.ReportMetric(avg(sum.fetch), "fetch-ms")
	b.ReportMetric(avg(sum.parse), "parse-ms")
	b.ReportMetric(avg(sum.js), "js-ms")
	b.ReportMetric(avg(sum.paint), "paint-ms")
	b.ReportMetric(avg(sum.render), "render-ms")
	b.ReportMetric(avg(sum.script)*1000, "script-ms")
	b.ReportMetric(avg(sum.layout)*1000, "layout-ms")
	b.ReportMetric(avg(sum.style)*1000, "style-ms")
	b.ReportMetric(avg(sum.task)*1000, "task-ms")
	b.ReportMetric(avg(sum.batch), "batch-render-ms")
	b.ReportMetric(syncMs, "sync-ms")
}

// threadTimes are the page's Performance domain metrics (durations in
// seconds of the main thread's time).
func (b *browser) threadTimes() map[string]float64 {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	r, err := chromedp.Call(ctx, performance.GetMetrics, cdp.Empty{})
	if err != nil {
		b.t.Fatalf("Performance.getMetrics: %v", err)
	}
	m := map[string]float64{}
	for _, x := range r.Metrics {
		m[x.Name] = x.Value
	}
	return m
}

// waitSynced waits until the console at url serves a snapshot with
// pods pods and the pods kind listed.
func waitSynced(tb testing.TB, url string, pods int) {
	tb.Helper()
	err := wait.Until(context.Background(), podTimeout, func(ctx context.Context) error {
		snap, err := readSnapshot(ctx, url)
		if err != nil {
			return err
		}
		var s struct {
			Objects map[string]map[string]json.RawMessage `json:"objects"`
			Status  map[string]struct{ Synced bool }      `json:"status"`
		}
		if err := json.Unmarshal(snap, &s); err != nil {
			return err
		}
		if !s.Status["pods"].Synced || len(s.Objects["pods"]) < pods {
			return fmt.Errorf("the console's snapshot has %d of %d pods (listed: %v)", len(s.Objects["pods"]), pods, s.Status["pods"].Synced)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// readSnapshot reads the first event of the console's feed, its snapshot.
func readSnapshot(ctx context.Context, url string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"api/feed", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	rd := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("reading the feed: %w", err)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return []byte(data), nil
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// populate makes benchNodes Ready nodes and benchPods Running, ready
// pods spread over them, named p-0000... (the first benchFlip are the
// ones setReady changes).
func populate(b testing.TB, api *client.Client) {
	b.Helper()
	ctx := context.Background()
	now := timestamppb.Now()
	for i := range benchNodes {
		name := fmt.Sprintf("fake-%02d", i)
		n, err := client.For[*v1.Node](api).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: name},
			Spec: &v1.NodeSpec{PodCidr: fmt.Sprintf("10.244.%d.0/24", i)}})
		if err != nil {
			b.Fatal(err)
		}
		n.Status = &v1.NodeStatus{Allocatable: map[string]string{"cpu": "8", "memory": "32Gi", "pods": "110"},
			Conditions: []*v1.Condition{{Type: "Ready", Status: "True", LastTransitionTime: now}}}
		if _, err := client.For[*v1.Node](api).UpdateStatus(ctx, n); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	parallel(b, benchPods, func(i int) error {
		p, err := client.For[*v1.Pod](api).Create(ctx, &v1.Pod{
			Metadata: &v1.ObjectMeta{Name: fmt.Sprintf("p-%04d", i), Namespace: "default", Labels: map[string]string{"app": fmt.Sprintf("app-%d", i%20)}},
			Spec: &v1.PodSpec{NodeName: fmt.Sprintf("fake-%02d", i%benchNodes),
				Containers: []*v1.Container{{Name: "c", Image: "app:1", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "10m", "memory": "16Mi"}}}}}})
		if err != nil {
			return err
		}
		p.Status = runningStatus(p, i, true)
		_, err = client.For[*v1.Pod](api).UpdateStatus(ctx, p)
		return err
	})
	b.Logf("made %d nodes and %d Running pods through the API in %v", benchNodes, benchPods, time.Since(start).Round(time.Millisecond))
}

// setReady sets the Ready condition of the first n pods.
func setReady(b testing.TB, api *client.Client, n int, ready bool) {
	b.Helper()
	ctx := context.Background()
	parallel(b, n, func(i int) error {
		_, err := client.For[*v1.Pod](api).Mutate(ctx, "default", fmt.Sprintf("p-%04d", i), true, func(p *v1.Pod) error {
			p.Status = runningStatus(p, i, ready)
			return nil
		})
		return err
	})
}

func runningStatus(p *v1.Pod, i int, ready bool) *v1.PodStatus {
	status := "True"
	if !ready {
		status = "False"
	}
	now := timestamppb.Now()
	return &v1.PodStatus{Phase: "Running", PodIp: fmt.Sprintf("10.244.%d.%d", i%benchNodes, 2+i/benchNodes),
		Conditions: []*v1.Condition{{Type: "PodScheduled", Status: "True", LastTransitionTime: now},
			{Type: "Ready", Status: status, LastTransitionTime: now}},
		ContainerStatuses: []*v1.ContainerStatus{{Name: "c", Ready: ready, Image: "app:1",
			State: &v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: now}}}}}
}

// parallel runs f(0..n-1) on 8 workers and fails b on the first error.
func parallel(b testing.TB, n int, f func(i int) error) {
	b.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
}
