// Command apiserver-bench measures the apiserver as a separate process on
// its embedded etcd (fsync on): create latency, watch delivery latency with
// 1, 100 and 1,000 concurrent watchers, and the process's RSS idle and with
// 1,000 watchers. Run: go run ./hack/bench/apiserver -bin bin/apiserver
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/hack/bench/internal/proc"
	"github.com/tugboat/tugboat/hack/bench/internal/stats"
)

func main() {
	bin := flag.String("bin", "bin/apiserver", "apiserver binary")
	creates := flag.Int("creates", 1000, "pods to create for the create latency")
	events := flag.Int("events", 200, "changes per watcher-count step")
	flag.Parse()
	for _, secure := range []bool{false, true} {
		mode := "insecure (no TLS, no auth)"
		if secure {
			mode = "secure (TLS 1.3, client certificate, RBAC)"
		}
		fmt.Printf("--- %s\n", mode)
		if err := run(*bin, *creates, *events, secure); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

func run(bin string, creates, events int, secure bool) error {
	dir, err := os.MkdirTemp("", "tugboat-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, err := proc.FreeAddr()
	if err != nil {
		return err
	}
	// One client holds all the watchers here: no per-client watch limits.
	args := []string{"--listen", addr, "--metrics-listen", "", "--data-dir", filepath.Join(dir, "etcd"), "--log-level", "warn",
		"--max-watches-per-connection=-1", "--max-watches-per-user=-1"}
	ccfg := client.Config{Server: addr}
	if secure {
		pkiDir := filepath.Join(dir, "pki")
		if err := pki.Init(pki.InitOptions{Dir: pkiDir}); err != nil {
			return err
		}
		args = append(args, "--pki-dir", pkiDir)
		if ccfg.TLS, err = client.TLSFromFiles(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "admin.crt"), filepath.Join(pkiDir, "admin.key")); err != nil {
			return err
		}
	} else {
		args = append(args, "--insecure")
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	c, err := client.New(ccfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	pods := client.For[*v1.Pod](c)
	for i := 0; ; i++ {
		if _, _, err := pods.List(ctx, client.ListOptions{Limit: 1}); err == nil {
			break
		}
		if i > 300 {
			return fmt.Errorf("apiserver did not answer")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	fmt.Printf("apiserver idle RSS (embedded etcd included): %s\n", proc.MiB(float64(proc.RSS(cmd.Process.Pid))))

	lat := make([]time.Duration, 0, creates)
	for i := 0; i < creates; i++ {
		p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: fmt.Sprint("bench-", i)},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
		t0 := time.Now()
		if _, err := pods.Create(ctx, p); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	fmt.Printf("create latency (%d sequential pods): p50 %s p99 %s\n", creates, pct(lat, 50), pct(lat, 99))

	cms := client.For[*v1.ConfigMap](c)
	for _, n := range []int{1, 100, 1000} {
		d, err := watchLatency(ctx, cms, n, events)
		if err != nil {
			return err
		}
		fmt.Printf("watch delivery latency, %4d watchers x %d changes: p50 %s p99 %s\n", n, events, pct(d, 50), pct(d, 99))
		if n == 1000 {
			fmt.Printf("apiserver RSS with 1000 watchers open: %s\n", proc.MiB(float64(proc.RSS(cmd.Process.Pid))))
		}
	}
	return nil
}

// watchLatency opens n watchers, makes `events` changes one at a time and
// measures, per watcher and change, the time from the start of the write to
// the watcher receiving it (an upper bound on commit-to-client).
func watchLatency(ctx context.Context, cms *client.Typed[*v1.ConfigMap], n, events int) ([]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var out []time.Duration
	starts := sync.Map{}
	var ready, done sync.WaitGroup
	prefix := fmt.Sprintf("w%d-", n)
	for i := 0; i < n; i++ {
		w, err := cms.Watch(ctx, client.WatchOptions{})
		if err != nil {
			return nil, err
		}
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			got := 0
			for got < events {
				ev, err := w.Next()
				if err != nil {
					return
				}
				if ev.Type != "ADDED" || !strings.HasPrefix(ev.Object.Metadata.Name, prefix) {
					continue
				}
				now := time.Now()
				if t0, ok := starts.Load(ev.Object.Metadata.Name); ok {
					mu.Lock()
					out = append(out, now.Sub(t0.(time.Time)))
					mu.Unlock()
				}
				got++
			}
		}()
	}
	ready.Wait()
	time.Sleep(500 * time.Millisecond) // let every stream be registered server-side
	for i := 0; i < events; i++ {
		name := fmt.Sprint(prefix, i)
		starts.Store(name, time.Now())
		if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: name}}); err != nil {
			return nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitCh := make(chan struct{})
	go func() { done.Wait(); close(waitCh) }()
	select {
	case <-waitCh:
	case <-time.After(60 * time.Second):
		return nil, fmt.Errorf("watchers did not receive every event within 60s")
	}
	return out, nil
}

func pct(d []time.Duration, p int) time.Duration { return stats.Percentile(d, p) }
