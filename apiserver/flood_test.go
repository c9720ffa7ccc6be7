package apiserver_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
)

func init() { helpers["apiserver"] = runAPIServer }

// The flooded apiserver's file limit: soft floodSoftLimit at start (the
// apiserver raises it), hard floodHardLimit.
const (
	floodSoftLimit = 512
	floodHardLimit = 1024
)

// runAPIServer runs a TLS apiserver with embedded etcd in this process
// under a low file limit, with its config from the environment
// (API_DATA_DIR, API_PKI_DIR, API_LISTEN, API_METRICS_LISTEN), until
// SIGTERM. It logs to stderr.
func runAPIServer() int {
	lim := syscall.Rlimit{Cur: floodSoftLimit, Max: floodHardLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	cfg := apiserver.Config{
		Listen:        os.Getenv("API_LISTEN"),
		MetricsListen: os.Getenv("API_METRICS_LISTEN"),
		DataDir:       os.Getenv("API_DATA_DIR"),
		Logger:        slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if err := apiserver.SecureFromPKIDir(&cfg, os.Getenv("API_PKI_DIR")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := apiserver.New(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestIdleConnectionFlood runs a TLS apiserver with embedded etcd as a
// process of its own at a file limit of 1024, floods its gRPC and metrics
// ports from 127.0.0.2 with thousands of connections that never send a
// byte, and checks that the process stays up and keeps answering an
// authenticated client from 127.0.0.1 — on the connection it had, and on
// new connections — while the flood lasts; that it raised its soft file
// limit and logged it; and that it counted what it refused.
func TestIdleConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a child apiserver for 33s; skipped with -short")
	}
	dir := t.TempDir()
	pkiDir := filepath.Join(dir, "pki")
	if err := pki.Init(pki.InitOptions{Dir: pkiDir}); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logPath := filepath.Join(dir, "apiserver.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := helperCommand(t, "apiserver", "API_DATA_DIR="+filepath.Join(dir, "etcd"), "API_PKI_DIR="+pkiDir,
		"API_LISTEN="+addr, "API_METRICS_LISTEN="+metricsAddr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when the process has ended, with its error in exitErr.
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("apiserver log (last 4 KB):\n%s", tail(b, 4096))
		}
	})
	tlsCfg, err := client.TLSFromFiles(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key"))
	if err != nil {
		t.Fatal(err)
	}
	dial := func() *client.Client {
		c, err := client.New(client.Config{Server: addr, TLS: tlsCfg, UserAgent: "flood-test"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A generous deadline: the machine running the test may be busy; an
	// apiserver at its file limit never answers at all.
	get := func(c *client.Client) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Objects().Get(ctx, &v1.GetRequest{Kind: "Namespace", Name: "default"})
		return err
	}
	steady := dial()
	defer steady.Close()
	wait.Eventually(t, 60*time.Second, "the apiserver answers", func() error {
		select {
		case <-exited:
			t.Fatalf("apiserver exited: %v", exitErr)
		default:
		}
		return get(steady)
	})

	// The flood: from 127.0.0.2, connections that never send a byte; each
	// is dialled again as soon as the server drops it.
	ctx, stopFlood := context.WithCancel(context.Background())
	var flood sync.WaitGroup
	var dialed, dropped atomic.Int64
	attacker := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: time.Second}
	for i := 0; i < 3000; i++ {
		target := addr
		if i%4 == 3 {
			target = metricsAddr
		}
		flood.Add(1)
		go func() {
			defer flood.Done()
			buf := make([]byte, 1)
			for ctx.Err() == nil {
				c, err := attacker.DialContext(ctx, "tcp", target)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				dialed.Add(1)
				stop := context.AfterFunc(ctx, func() { c.Close() })
				_, _ = c.Read(buf) // until the server resets or closes it
				stop()
				c.Close()
				dropped.Add(1)
				time.Sleep(time.Second)
			}
		}()
	}
	defer func() { stopFlood(); flood.Wait() }()

	// While it lasts — longer than etcd's 30s file purge interval (the
	// file open that, at the file limit, ends the process on EMFILE) and
	// many handshake timeouts — the connected client asks every 100ms, a
	// new connection every second.
	var failures []string
	end := time.Now().Add(33 * time.Second)
	nextNew := time.Now().Add(time.Second)
	for n := 0; time.Now().Before(end); n++ {
		if err := get(steady); err != nil {
			failures = append(failures, fmt.Sprintf("%s connected client: %v", time.Now().Format("15:04:05.000"), err))
		}
		if time.Now().After(nextNew) {
			c := dial()
			if err := get(c); err != nil {
				failures = append(failures, fmt.Sprintf("%s new connection: %v", time.Now().Format("15:04:05.000"), err))
			}
			c.Close()
			nextNew = time.Now().Add(time.Second)
		}
		select {
		case <-exited:
			t.Fatalf("the apiserver exited during the flood: %v", exitErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("flood: %d connections dialled, %d dropped by the server", dialed.Load(), dropped.Load())
	if len(failures) > 0 {
		t.Errorf("%d requests failed during the flood:\n%s", len(failures), strings.Join(failures[:min(len(failures), 20)], "\n"))
	}
	if err := get(steady); err != nil {
		t.Errorf("after the flood: %v", err)
	}

	// What it said and counted.
	log, _ := os.ReadFile(logPath)
	want := fmt.Sprintf("fileLimitSoft=%d fileLimitHard=%d fileLimitBefore=%d", floodHardLimit, floodHardLimit, floodSoftLimit)
	if !strings.Contains(string(log), want) {
		t.Errorf("the log does not say the file limit was raised (%s)", want)
	}
	refused := metricValue(t, metricsAddr, `tugboat_apiserver_connections_refused_total{listener="grpc",reason="max-connections-per-host"}`)
	if refused == 0 {
		t.Errorf("no refused connections counted")
	}
	t.Logf("refused at accept (gRPC, per host): %.0f", refused)
}

// metricValue scrapes one sample from a /metrics endpoint (0 if absent).
func metricValue(t *testing.T, addr, sample string) float64 {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Errorf("scraping %s: %v", addr, err)
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
