package console

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// BenchmarkFeed5000Pods measures the console's server side with 5,000
// pods on 50 nodes (made once through an in-process apiserver's API):
// per op, a fresh feed from its start until every pod is in its state
// (sync-ms; list-ms is a plain paged List of the same pods, for
// comparison), and the snapshot a page starts from, encoded
// (snapshot-ms, snapshot-bytes).
func BenchmarkFeed5000Pods(b *testing.B) {
	const nodes, pods = 50, 5000
	srv := apiservertest.StartSecure(b)
	ctx := context.Background()
	for i := range nodes {
		if _, err := client.For[*v1.Node](srv.Client).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: fmt.Sprintf("fake-%02d", i)}}); err != nil {
			b.Fatal(err)
		}
	}
	var (
		wg    sync.WaitGroup
		next  = make(chan int)
		errMu sync.Mutex
		first error
	)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				p := podOn(fmt.Sprintf("p-%04d", i), fmt.Sprintf("fake-%02d", i%nodes))
				p.Metadata.Labels = map[string]string{"app": fmt.Sprintf("app-%d", i%20)}
				if _, err := client.For[*v1.Pod](srv.Client).Create(ctx, p); err != nil {
					errMu.Lock()
					first = err
					errMu.Unlock()
				}
			}
		})
	}
	for i := range pods {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		b.Fatal(first)
	}
	var syncMs, listMs, snapMs, snapBytes float64
	for b.Loop() {
		t0 := time.Now()
		items, _, err := client.For[*v1.Pod](srv.Client).List(ctx, client.ListOptions{Limit: 500})
		if err != nil || len(items) != pods {
			b.Fatalf("list: %d pods, %v", len(items), err)
		}
		listMs += ms(time.Since(t0))

		fctx, cancel := context.WithCancel(ctx)
		f := newFeed(srv.Client, slog.New(slog.DiscardHandler))
		done := make(chan struct{})
		t0 = time.Now()
		go func() { defer close(done); f.run(fctx) }()
		for {
			f.mu.Lock()
			n, synced := len(f.state[kindPods]), f.status[kindPods].Synced
			f.mu.Unlock()
			if synced && n == pods {
				break
			}
			time.Sleep(time.Millisecond)
		}
		syncMs += ms(time.Since(t0))

		t0 = time.Now()
		sub, snap := f.subscribe()
		buf, err := json.Marshal(snap)
		if err != nil {
			b.Fatal(err)
		}
		snapMs += ms(time.Since(t0))
		snapBytes += float64(len(buf))
		f.unsubscribe(sub)
		cancel()
		<-done
	}
	n := float64(b.N)
	b.ReportMetric(syncMs/n, "sync-ms")
	b.ReportMetric(listMs/n, "list-ms")
	b.ReportMetric(snapMs/n, "snapshot-ms")
	b.ReportMetric(snapBytes/n, "snapshot-bytes")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
