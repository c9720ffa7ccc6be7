package proxy

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

func latencyHistogram(b testing.TB, reg *prometheus.Registry) (uint64, float64) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tugboat_proxy_programming_latency_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// BenchmarkEndpointChangeToRules is the proxy's programming latency
// through the whole path: a real apiserver holds 1,000 Services x 10
// endpoints; the proxy runs on a namespace of the benchmark's own; each
// iteration moves one endpoint of one Service through the API. It reports
// p50/p99 of the proxy's own metric (Endpoints change seen by the informer
// -> rules committed) and of write-to-live (the Update call returning ->
// the metric counting the change, polled every millisecond), plus the
// time from proxy start to the 1,000 Services programmed. Run with
// -benchtime 200x.
func BenchmarkEndpointChangeToRules(b *testing.B) {
	const services, perService = 1000, 10
	nstest.RequireRoot(b)
	srv := apiservertest.Start(b)
	ctx := context.Background()
	l := nstest.NewLab(b, 0)
	svcs, epsAPI := client.For[*v1.Service](srv.Client), client.For[*v1.EndpointSlice](srv.Client)
	// endpointsOf is Service i's endpoints at generation gen (0: the
	// first); consecutive generations differ.
	endpointsOf := func(i, gen int) *v1.EndpointSlice {
		e := endpoints(fmt.Sprintf("svc-%04d", i))
		second := 244
		if gen > 0 {
			second = 100 + gen%100
		}
		for j := 0; j < perService; j++ {
			e.Endpoints = append(e.Endpoints, &v1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", second, i/25, (i%25)*10+j+2)}})
		}
		return e
	}
	var wg sync.WaitGroup
	errs := make(chan error, services)
	sem := make(chan struct{}, 16)
	for i := 0; i < services; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := svcs.Create(ctx, service(fmt.Sprintf("svc-%04d", i), 80)); err != nil {
				errs <- err
				return
			}
			if _, err := epsAPI.Create(ctx, endpointsOf(i, 0)); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	cfg := Config{Client: srv.Client, NodeName: "node-a", ClusterCIDR: netip.MustParsePrefix("10.0.0.0/8"),
		ClusterDNS: netip.MustParseAddr("10.96.0.10"), ClusterDomain: "cluster.local", UpstreamDNS: []string{"127.0.0.1:9"},
		NetNS: l.Node.Fd(), Registry: reg, Logger: testLogger()}
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Run(pctx, cfg) }()
	defer func() { cancel(); <-done }()
	// Programmed once the table holds the last Service's chain.
	wait.Eventually(b, 2*time.Minute, "the last Service's chain programmed", func() error {
		_, err := l.Node.Exec(ctx, "nft", "list", "chain", "ip", "tugboat", "svc-default/svc-0999/tcp/80")
		return err
	})
	initial := time.Since(start)

	var seen, live []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n0, sum0 := latencyHistogram(b, reg)
		idx := (i * 7) % services
		e, err := epsAPI.Get(ctx, "default", fmt.Sprintf("svc-%04d", idx))
		if err != nil {
			b.Fatal(err)
		}
		e.Endpoints = endpointsOf(idx, i+1).Endpoints
		if _, err := epsAPI.Update(ctx, e); err != nil {
			b.Fatal(err)
		}
		written := time.Now()
		for {
			n, sum := latencyHistogram(b, reg)
			if n > n0 {
				live = append(live, time.Since(written).Seconds())
				seen = append(seen, (sum-sum0)/float64(n-n0))
				break
			}
			if time.Since(written) > 30*time.Second {
				b.Fatalf("change %d never programmed", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
	b.StopTimer()
	slices.Sort(seen)
	slices.Sort(live)
	b.ReportMetric(pct(seen, 0.5)*1000, "seen-to-live-p50-ms")
	b.ReportMetric(pct(seen, 0.99)*1000, "seen-to-live-p99-ms")
	b.ReportMetric(pct(live, 0.5)*1000, "write-to-live-p50-ms")
	b.ReportMetric(pct(live, 0.99)*1000, "write-to-live-p99-ms")
	b.ReportMetric(initial.Seconds(), "start-to-programmed-s")
}
