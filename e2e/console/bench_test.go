package console

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
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
// page load until every chip is drawn and painted. It reports
// load-ms (navigation start → the frame after the last chip),
// render-ms (the snapshot's arrival → every chip in the DOM, the page's
// own measure) and batch-render-ms (the longest redraw of one feed
// batch while 1,000 pods change readiness, i.e. whether the page stays
// responsive). The objects are made through an in-process apiserver's
// API (fake Node objects, pods bound to them with a Running status; no
// kubelets), so the benchmark needs no root.
func BenchmarkClusterView5000Pods(b *testing.B) {
	if _, err := chromiumPath(); err != nil {
		containerdtest.SkipOrFail(b, err)
	}
	srv := apiservertest.StartSecure(b)
	populate(b, srv.Client)
	con := startConsole(b, certCreds(srv.Addr(), srv.PKIDir, "admin"), "--listen", "127.0.0.1:0")
	br := newBrowser(b)
	br.run("install the paint probe", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: paintProbe})
		return err
	}))
	var loadMs, renderMs, batchMs float64
	ready, n := true, 0
	// b.Loop: the setup above runs once, however many iterations.
	for b.Loop() {
		n++
		br.open(con.URL)
		br.waitFor("every pod drawn and painted", fmt.Sprintf(`(() => {
			const c = window.__console;
			if (!window.__painted) return "chips " + (c.chips ?? 0) + " of %d, snapshots " + c.snapshots;
			return c.chips >= %d ? "" : "chips " + c.chips;
		})()`, benchPods, benchPods), podTimeout)
		var m struct{ Painted, FirstRender float64 }
		br.value(`({Painted: window.__painted, FirstRender: window.__console.firstRenderMs})`, &m)
		loadMs += m.Painted
		renderMs += m.FirstRender
		if n == 1 {
			br.screenshot("5000-pods")
		}
		// One batch of readiness changes: the page redraws only the
		// chips that changed.
		b.StopTimer()
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
		batchMs += batch
		b.StartTimer()
	}
	b.ReportMetric(loadMs/float64(n), "load-ms")
	b.ReportMetric(renderMs/float64(n), "render-ms")
	b.ReportMetric(batchMs/float64(n), "batch-render-ms")
}

// populate makes benchNodes Ready nodes and benchPods Running, ready
// pods spread over them, named p-0000... (the first benchFlip are the
// ones setReady changes).
func populate(b *testing.B, api *client.Client) {
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
func setReady(b *testing.B, api *client.Client, n int, ready bool) {
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
func parallel(b *testing.B, n int, f func(i int) error) {
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
