// Command controllers-bench measures the controller-manager as a separate
// process against the apiserver (also a separate process, embedded etcd,
// fsync on): the time from the first of N ReplicaSets × R replicas being
// created until all N×R pods exist, and the controller-manager's RSS and Go
// heap at that moment and once it has settled.
//
// Run: make build && go run ./hack/bench/controllers
// (defaults: 1,000 ReplicaSets × 10 replicas, every controller enabled).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/hack/bench/internal/proc"
)

func main() {
	apiserverBin := flag.String("apiserver", "bin/apiserver", "apiserver binary")
	cmBin := flag.String("controller-manager", "bin/controller-manager", "controller-manager binary")
	n := flag.Int("replicasets", 1000, "ReplicaSets to create")
	r := flag.Int("replicas", 10, "replicas per ReplicaSet")
	workers := flag.Int("workers", 5, "--concurrent-replicaset-syncs")
	flag.Parse()
	if err := run(*apiserverBin, *cmBin, *n, *r, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(apiserverBin, cmBin string, n, r, workers int) error {
	dir, err := os.MkdirTemp("", "tugboat-bench-cm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr := freeAddr()
	api := exec.Command(apiserverBin, "--insecure", "--listen", addr, "--kube-listen", "", "--metrics-listen", "", "--data-dir", filepath.Join(dir, "etcd"), "--log-level", "warn")
	api.Stderr = os.Stderr
	if err := api.Start(); err != nil {
		return err
	}
	defer func() { _ = api.Process.Kill(); _ = api.Wait() }()
	c, err := client.New(client.Config{Server: addr})
	if err != nil {
		return err
	}
	ctx := context.Background()
	if err := wait.Until(ctx, 30*time.Second, func(ctx context.Context) error {
		_, _, err := client.For[*v1.Namespace](c).List(ctx, client.ListOptions{Limit: 1})
		return err
	}); err != nil {
		return fmt.Errorf("apiserver did not answer: %w", err)
	}

	metricsAddr := freeAddr()
	cm := exec.Command(cmBin, "--server", addr, "--metrics-listen", metricsAddr, "--log-level", "warn",
		"--concurrent-replicaset-syncs", strconv.Itoa(workers))
	cm.Stderr = os.Stderr
	if err := cm.Start(); err != nil {
		return err
	}
	defer func() { _ = cm.Process.Kill(); _ = cm.Wait() }()
	if err := wait.Until(ctx, 30*time.Second, func(context.Context) error {
		return metricIs(metricsAddr, "tugboat_controller_manager_leader", 1)
	}); err != nil {
		return fmt.Errorf("controller-manager did not become leader: %w", err)
	}
	time.Sleep(time.Second) // let its informers list the (empty) cluster
	fmt.Printf("controller-manager idle: RSS %s, heap in use %s\n", proc.MiB(float64(proc.RSS(cm.Process.Pid))), proc.MiB(metric(metricsAddr, "go_memstats_heap_inuse_bytes")))

	// Count pods as the watch shows them.
	total := int64(n * r)
	var created atomic.Int64
	done := make(chan time.Time, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := client.For[*v1.Pod](c).Watch(wctx, client.WatchOptions{Namespace: "default"})
	if err != nil {
		return err
	}
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			if ev.Type == "ADDED" && created.Add(1) == total {
				done <- time.Now()
				return
			}
		}
	}()

	rsAPI := client.For[*v1.ReplicaSet](c)
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errc := make(chan error, 1)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			name := fmt.Sprintf("rs-%04d", i)
			lbl := map[string]string{"app": name}
			_, err := rsAPI.Create(ctx, &v1.ReplicaSet{
				Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
				Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(int32(r)), Selector: &v1.LabelSelector{MatchLabels: lbl},
					Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl},
						Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}}},
			})
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	fmt.Printf("created %d ReplicaSets in %s\n", n, time.Since(start).Round(time.Millisecond))
	var end time.Time
	select {
	case end = <-done:
	case <-time.After(5 * time.Minute):
		return fmt.Errorf("only %d of %d pods after 5m", created.Load(), total)
	}
	d := end.Sub(start)
	fmt.Printf("all %d pods (%d ReplicaSets × %d) exist %s after the first ReplicaSet was created: %.0f pods/s (--concurrent-replicaset-syncs %d)\n",
		total, n, r, d.Round(time.Millisecond), float64(total)/d.Seconds(), workers)
	fmt.Printf("controller-manager then: RSS %s, heap in use %s\n", proc.MiB(float64(proc.RSS(cm.Process.Pid))), proc.MiB(metric(metricsAddr, "go_memstats_heap_inuse_bytes")))

	// Let the status writes and events drain, then look again.
	_ = wait.Until(ctx, 60*time.Second, func(context.Context) error {
		return metricIs(metricsAddr, "tugboat_controller_manager_queue_depth", 0)
	})
	time.Sleep(2 * time.Second)
	fmt.Printf("controller-manager settled: RSS %s, heap in use %s, syncs %.0f\n", proc.MiB(float64(proc.RSS(cm.Process.Pid))),
		proc.MiB(metric(metricsAddr, "go_memstats_heap_inuse_bytes")), metric(metricsAddr, "tugboat_controller_manager_sync_duration_seconds_count"))
	return nil
}

// metric sums the samples of a metric family on the /metrics page.
func metric(addr, name string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != ' ' && line[len(name)] != '{') {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	if !found {
		return -1
	}
	return sum
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// metricIs returns nil when the metric at addr has the value want.
func metricIs(addr, name string, want float64) error {
	if v := metric(addr, name); v != want {
		return fmt.Errorf("%s is %v, want %v", name, v, want)
	}
	return nil
}
