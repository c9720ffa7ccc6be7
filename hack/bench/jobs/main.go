// Command jobs benchmarks the Job controller: the apiserver and the
// controller-manager run as processes; the driver creates N Jobs of one
// pod each at once (16 clients) and plays the scheduler and a kubelet that
// binds every pod and reports it Succeeded at once; it prints the time
// until every Job is Complete and the controller-manager's CPU and RSS.
//
//	make build && go run ./hack/bench/jobs -jobs 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/hack/bench/internal/proc"
)

func main() {
	apiserverBin := flag.String("apiserver", "bin/apiserver", "apiserver binary")
	cmBin := flag.String("controller-manager", "bin/controller-manager", "controller-manager binary")
	n := flag.Int("jobs", 1000, "Jobs to create")
	flag.Parse()
	if err := run(*apiserverBin, *cmBin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "jobs bench:", err)
		os.Exit(1)
	}
}

// cpuSeconds is a process's user+system CPU time from /proc/<pid>/stat.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func run(apiserverBin, cmBin string, n int) error {
	dir, err := os.MkdirTemp("", "tugboat-bench-jobs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	addr, _ := proc.FreeAddr()
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
	node := &v1.Node{Metadata: &v1.ObjectMeta{Name: "bench-node"}}
	if _, err := client.For[*v1.Node](c).Create(ctx, node); err != nil {
		return err
	}
	metricsAddr, _ := proc.FreeAddr()
	cm := exec.Command(cmBin, "--server", addr, "--metrics-listen", metricsAddr, "--log-level", "warn", "--controllers", "*,-nodelifecycle,-nodeipam")
	cm.Stderr = os.Stderr
	if err := cm.Start(); err != nil {
		return err
	}
	defer func() { _ = cm.Process.Kill(); _ = cm.Wait() }()
	time.Sleep(2 * time.Second) // leader election and the first lists
	fmt.Printf("controller-manager idle: RSS %s\n", proc.MiB(float64(proc.RSS(cm.Process.Pid))))

	// The fake kubelet: bind each new pod and report it Succeeded.
	pods := client.For[*v1.Pod](c)
	w, err := pods.Watch(ctx, client.WatchOptions{Namespace: "default"})
	if err != nil {
		return err
	}
	work := make(chan *v1.Pod, 100000)
	for range 32 {
		go func() {
			for p := range work {
				m := p.GetMetadata()
				var err error
				for range 50 { // concurrent binds to one node may conflict: retry
					if _, err = c.Bind(ctx, m.Namespace, m.Name, "bench-node", 0); err == nil {
						break
					}
				}
				if err != nil {
					fmt.Fprintln(os.Stderr, "bind:", err)
					continue
				}
				_, _ = pods.Mutate(ctx, m.Namespace, m.Name, true, func(p *v1.Pod) error {
					now := timestamppb.Now()
					p.Status = &v1.PodStatus{Phase: "Succeeded", StartTime: now, ContainerStatuses: []*v1.ContainerStatus{{Name: "pi",
						State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}}}}
					return nil
				})
			}
		}()
	}
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			if ev.Type == "ADDED" {
				work <- ev.Object
			}
		}
	}()
	// Count completions as the Job watch shows them.
	var complete atomic.Int64
	done := make(chan time.Time, 1)
	jw, err := client.For[*v1.Job](c).Watch(ctx, client.WatchOptions{Namespace: "default"})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	go func() {
		for {
			ev, err := jw.Next()
			if err != nil {
				return
			}
			for _, cond := range ev.Object.GetStatus().GetConditions() {
				if cond.Type == "Complete" && cond.Status == "True" && !seen[ev.Object.Metadata.Name] {
					seen[ev.Object.Metadata.Name] = true
					if complete.Add(1) == int64(n) {
						done <- time.Now()
					}
				}
			}
		}
	}()
	cpu0 := cpuSeconds(cm.Process.Pid)
	jobs := client.For[*v1.Job](c)
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := jobs.Create(ctx, &v1.Job{Metadata: &v1.ObjectMeta{Name: fmt.Sprintf("pi-%04d", i), Namespace: "default"},
				Spec: &v1.JobSpec{BackoffLimit: proto.Int32(4), Template: &v1.PodTemplateSpec{Spec: &v1.PodSpec{RestartPolicy: "Never",
					Containers: []*v1.Container{{Name: "pi", Image: "tugboat.local/busybox:latest", Command: []string{"sh", "-c", "echo 3.14159"}}}}}}})
			if err != nil {
				fmt.Fprintln(os.Stderr, "create:", err)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("created %d Jobs in %s\n", n, time.Since(start).Round(time.Millisecond))
	var end time.Time
	select {
	case end = <-done:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("only %d of %d Jobs complete after 10m", complete.Load(), n)
	}
	d := end.Sub(start)
	cpu := cpuSeconds(cm.Process.Pid) - cpu0
	fmt.Printf("all %d Jobs Complete %s after the first was created (%.0f Jobs/s); controller-manager CPU %.2f s (%.2f ms per Job), RSS %s\n",
		n, d.Round(time.Millisecond), float64(n)/d.Seconds(), cpu, cpu*1000/float64(n), proc.MiB(float64(proc.RSS(cm.Process.Pid))))
	return nil
}
