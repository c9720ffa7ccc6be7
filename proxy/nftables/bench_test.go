package nftables

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// histogramSum returns a histogram's sample count and sum.
func histogramSum(b testing.TB, reg *prometheus.Registry, name string) (uint64, float64) {
	mfs, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			h := mf.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// BenchmarkProgrammingLatency programs 1,000 Services x 10 endpoints into
// a namespace of its own, then, per iteration, moves one endpoint of one
// Service and waits for the rules to be live. It reports the datapath's
// programming latency (change seen -> batch committed) p50/p99 and the
// initial full sync. Run with -benchtime 300x.
func BenchmarkProgrammingLatency(b *testing.B) {
	const services, perService = 1000, 10
	node := nstest.New(b, "bench")
	src := newFakeSource()
	keys := make([]string, services)
	for i := 0; i < services; i++ {
		var ips []string
		for j := 0; j < perService; j++ {
			ips = append(ips, fmt.Sprintf("10.244.%d.%d", i/25, (i%25)*10+j+2))
		}
		s := svc(fmt.Sprintf("svc-%04d", i), "NodePort", fmt.Sprintf("10.96.%d.%d", i/250, i%250+2), port("", "TCP", 80, int32(30000+i)))
		keys[i] = src.set(s, endpointsOf(8080, "TCP", ips...))
	}
	reg := prometheus.NewRegistry()
	d, err := New(Config{ClusterCIDR: clusterCIDR, NetNS: node.Fd(), Source: src, Registry: reg, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	synced := make(chan struct{}, 1)
	d.onSync = func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-synced
	full := time.Since(start)

	var lat []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := keys[i%services]
		s, _ := src.Service(k)
		e, _ := src.Endpoints(k)
		moved := v1Clone(e)
		moved.Subsets[0].Addresses[0].Ip = fmt.Sprintf("10.245.%d.%d", (i/250)%250, i%250+1)
		src.set(s, moved)
		n0, sum0 := histogramSum(b, reg, "tugboat_proxy_programming_latency_seconds")
		d.Changed(k)
		for {
			<-synced
			if n, sum := histogramSum(b, reg, "tugboat_proxy_programming_latency_seconds"); n > n0 {
				lat = append(lat, (sum-sum0)/float64(n-n0))
				break
			}
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(percentile(lat, 0.50)*1000, "p50-ms")
	b.ReportMetric(percentile(lat, 0.99)*1000, "p99-ms")
	b.ReportMetric(full.Seconds(), "fullsync-s")
}

// BenchmarkClusterIPThroughput serves HTTP from pod2 and loads it from
// pod1 with wrk (keep-alive: NAT on the first packet of each connection
// only) and hey -disable-keepalive (a new connection, so a new DNAT, per
// request), straight to the pod IP and through a ClusterIP. It reports
// requests/s of each and the ClusterIP/pod ratio. Each run lasts 5 s.
// Run with -benchtime 1x; needs wrk and hey (apt-get install wrk hey).
func BenchmarkClusterIPThroughput(b *testing.B) {
	for _, tool := range []string{"wrk", "hey"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s not installed (apt-get install wrk hey)", tool)
		}
	}
	l := nstest.NewLab(b, 2)
	client, server := l.Pods[0], l.Pods[1]
	ln := server.Listen("tcp", ":8080")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	src := newFakeSource()
	src.set(svc("bench", "ClusterIP", "10.96.0.50", port("", "TCP", 80, 0)), endpointsOf(8080, "TCP", nstest.PodIP(1)))
	d, err := New(Config{ClusterCIDR: clusterCIDR, NetNS: l.Node.Fd(), Source: src, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	synced := make(chan struct{}, 1)
	d.onSync = func() {
		select {
		case synced <- struct{}{}:
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-synced

	targets := []struct{ name, url string }{{"pod", "http://" + nstest.PodIP(1) + ":8080/"}, {"clusterip", "http://10.96.0.50/"}}
	tools := []struct {
		name string
		args func(url string) []string
	}{
		{"wrk", func(url string) []string { return []string{"wrk", "-t1", "-c32", "-d5s", url} }},
		{"hey", func(url string) []string { return []string{"hey", "-z", "5s", "-c", "32", "-disable-keepalive", url} }},
	}
	rps := map[string]float64{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, tool := range tools {
			for _, tg := range targets {
				// Start from an empty conntrack table: entries left in
				// TIME_WAIT by the other target's run (same client ports,
				// same backend) would clash with this run's and drop SYNs.
				if err := l.Node.NL.ConntrackTableFlush(netlink.ConntrackTable); err != nil {
					b.Fatal(err)
				}
				args := tool.args(tg.url)
				out, err := client.Exec(context.Background(), args[0], args[1:]...)
				if err != nil {
					b.Fatal(err)
				}
				v := parseRPS(out)
				if v == 0 {
					b.Fatalf("no Requests/sec in %s output:\n%s", tool.name, out)
				}
				rps[tool.name+"-"+tg.name] += v / float64(b.N)
				if dir := os.Getenv("TUGBOAT_BENCH_OUT"); dir != "" {
					_ = os.WriteFile(fmt.Sprintf("%s/%s-%s.txt", dir, tool.name, tg.name), []byte(out), 0o644)
				}
			}
		}
	}
	b.StopTimer()
	for _, tool := range tools {
		pod, cip := rps[tool.name+"-pod"], rps[tool.name+"-clusterip"]
		b.ReportMetric(pod, tool.name+"-pod-rps")
		b.ReportMetric(cip, tool.name+"-clusterip-rps")
		b.ReportMetric(cip/pod, tool.name+"-ratio")
	}
}

func v1Clone(e *v1.Endpoints) *v1.Endpoints {
	c := &v1.Endpoints{Metadata: e.Metadata}
	for _, s := range e.Subsets {
		ns := &v1.EndpointSubset{Ports: s.Ports, NotReadyAddresses: s.NotReadyAddresses}
		for _, a := range s.Addresses {
			ns.Addresses = append(ns.Addresses, &v1.EndpointAddress{Ip: a.Ip})
		}
		c.Subsets = append(c.Subsets, ns)
	}
	return c
}

var rpsRE = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

// parseRPS reads "Requests/sec: N" (wrk and hey both print it).
func parseRPS(out string) float64 {
	m := rpsRE.FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

func quietLogger() *slog.Logger {
	if os.Getenv("TUGBOAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}
