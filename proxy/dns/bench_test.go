package dns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/wait"
)

// benchServeEnv makes the test binary a benchmark server (see
// TestDNSBenchServer): its value is the address to serve on.
const benchServeEnv = "TUGBOAT_DNS_BENCH_SERVE"

// benchZone holds 1,000 Services with two named ports each.
func benchZone() *Zone {
	z := NewZone("cluster.local")
	for i := 0; i < 1000; i++ {
		z.SetService(svcObj("default", fmt.Sprintf("svc-%04d", i), fmt.Sprintf("10.96.%d.%d", i/250, i%250+2),
			namedPort("http", "TCP", 80), namedPort("metrics", "TCP", 9100)))
	}
	return z
}

// TestDNSBenchServer is not a test: run by BenchmarkDNSQPS as a child
// process (pinned to one core), it serves the bench zone until its stdin
// closes.
func TestDNSBenchServer(t *testing.T) {
	addr := os.Getenv(benchServeEnv)
	if addr == "" {
		t.Skip("only run as BenchmarkDNSQPS's server")
	}
	s, err := NewServer(Config{Listen: netip.MustParseAddrPort(addr), Zone: benchZone(), Registry: prometheus.NewRegistry(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	go func() {
		// Ready once it answers.
		c := &dns.Client{Timeout: 100 * time.Millisecond}
		err := wait.Until(ctx, time.Minute, func(context.Context) error {
			_, _, err := c.Exchange(new(dns.Msg).SetQuestion("cluster.local.", dns.TypeSOA), addr)
			return err
		})
		if err == nil {
			fmt.Println("ready")
		}
	}()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDNSQPS measures cluster-zone queries per second answered by a
// server confined to one core: the server is a child process started with
// `taskset -c 0` and GOMAXPROCS=1; this process sends A queries for the
// zone's Services from 64 UDP sockets, each waiting for its answer before
// the next query. Run it as
//
//	taskset -c 1 go test -run '^$' -bench DNSQPS -benchtime 200000x ./proxy/dns/
//
// so that the load generator stays off the server's core.
func BenchmarkDNSQPS(b *testing.B) {
	if _, err := exec.LookPath("taskset"); err != nil {
		b.Skip("taskset (util-linux) not installed")
	}
	addr := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(b)).String()
	cmd := exec.Command("taskset", "-c", "0", os.Args[0], "-test.run", "^TestDNSBenchServer$", "-test.v")
	cmd.Env = append(os.Environ(), benchServeEnv+"="+addr, "GOMAXPROCS=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "ready") {
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	const workers = 64
	queries := make([][]byte, 1000)
	for i := range queries {
		m := new(dns.Msg).SetQuestion(fmt.Sprintf("svc-%04d.default.svc.cluster.local.", i), dns.TypeA)
		if queries[i], err = m.Pack(); err != nil {
			b.Fatal(err)
		}
	}
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("udp", addr)
			if err != nil {
				failed.Add(1)
				return
			}
			defer conn.Close()
			buf := make([]byte, 512)
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				q := queries[i%int64(len(queries))]
				_ = conn.SetDeadline(time.Now().Add(time.Second))
				if _, err := conn.Write(q); err != nil {
					failed.Add(1)
					continue
				}
				n, err := conn.Read(buf)
				var m dns.Msg
				if err != nil || m.Unpack(buf[:n]) != nil || m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if f := failed.Load(); f > int64(b.N)/1000 {
		b.Fatalf("%d of %d queries failed or timed out", f, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "queries/s")
}
