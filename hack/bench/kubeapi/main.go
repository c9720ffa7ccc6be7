// Command kubeapi-bench compares the apiserver's two front doors in one
// run, on one apiserver process (TLS 1.3, client certificates, RBAC,
// embedded etcd with fsync): create latency p50/p99 through gRPC (tugctl's
// client) and through HTTPS+JSON (client-go), watch delivery p99 with 100
// watchers on each door, the apiserver's memory per idle watch on each,
// and how many `kubectl get pods -o name` invocations per second a loop
// sustains. Run: go run ./hack/bench/kubeapi -bin bin/apiserver
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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/hack/bench/internal/proc"
	"github.com/tugboat/tugboat/hack/bench/internal/stats"
)

func main() {
	bin := flag.String("bin", "bin/apiserver", "apiserver binary")
	creates := flag.Int("creates", 500, "pods to create per door for the create latency")
	events := flag.Int("events", 200, "changes for the watch latency")
	watchers := flag.Int("watchers", 100, "concurrent watchers for the watch latency")
	idle := flag.Int("idle", 1000, "idle watchers opened per door for the memory per watch")
	kubectlRuns := flag.Int("kubectl", 50, "kubectl get pods -o name invocations")
	flag.Parse()
	if err := run(*bin, *creates, *events, *watchers, *idle, *kubectlRuns); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// server is one apiserver process with a client on each door.
type server struct {
	dir, kaddr, ca, crt, key string
	cmd                      *exec.Cmd
	g                        *client.Client
	cs                       *kubernetes.Clientset
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.g.Close()
	os.RemoveAll(s.dir)
}

func start(ctx context.Context, bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "tugboat-kubeapi-bench-")
	if err != nil {
		return nil, err
	}
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	kaddr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	pkiDir := filepath.Join(dir, "pki")
	if err := pki.Init(pki.InitOptions{Dir: pkiDir}); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--listen", addr, "--kube-listen", kaddr, "--metrics-listen", "", "--data-dir", filepath.Join(dir, "etcd"),
		"--pki-dir", pkiDir, "--log-level", "warn",
		// One client holds all the watches here: no per-client watch limits.
		"--max-watches-per-connection=-1", "--max-watches-per-user=-1")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{dir: dir, kaddr: kaddr, cmd: cmd, ca: filepath.Join(pkiDir, "ca.crt"), crt: filepath.Join(pkiDir, "admin.crt"), key: filepath.Join(pkiDir, "admin.key")}
	tlsCfg, err := client.TLSFromFiles(s.ca, s.crt, s.key)
	if err != nil {
		return nil, err
	}
	if s.g, err = client.New(client.Config{Server: addr, TLS: tlsCfg}); err != nil {
		return nil, err
	}
	rc := &rest.Config{Host: "https://" + kaddr, QPS: -1,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.ca, CertFile: s.crt, KeyFile: s.key}}
	rc.ContentType = "application/json" // HTTPS+JSON both ways
	if s.cs, err = kubernetes.NewForConfig(rc); err != nil {
		return nil, err
	}
	for i := 0; ; i++ {
		if _, err := s.cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err == nil {
			break
		}
		if i > 300 {
			s.stop()
			return nil, fmt.Errorf("apiserver did not answer on both doors")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	return s, nil
}

// idleWatchMemory opens n idle watches on one door of a fresh apiserver,
// each from a listed version as informers watch, and returns the RSS
// growth per watch.
func idleWatchMemory(ctx context.Context, bin, door string, n int) (float64, error) {
	s, err := start(ctx, bin)
	if err != nil {
		return 0, err
	}
	defer s.stop()
	sl, err := s.cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	before := proc.RSS(s.cmd.Process.Pid)
	for i := 0; i < n; i++ {
		if door == "gRPC" {
			_, err = client.For[*v1.Secret](s.g).Watch(wctx, client.WatchOptions{Namespace: "default", ResourceVersion: parseRV(sl.ResourceVersion)})
		} else {
			_, err = s.cs.CoreV1().Secrets("default").Watch(wctx, metav1.ListOptions{ResourceVersion: sl.ResourceVersion})
		}
		if err != nil {
			return 0, err
		}
	}
	time.Sleep(3 * time.Second)
	return float64(proc.RSS(s.cmd.Process.Pid)-before) / 1024 / float64(n), nil
}

func parseRV(s string) int64 {
	var n int64
	fmt.Sscan(s, &n)
	return n
}

func run(bin string, creates, events, watchers, idle, kubectlRuns int) error {
	ctx := context.Background()
	for _, door := range []string{"HTTPS+JSON", "gRPC"} {
		kib, err := idleWatchMemory(ctx, bin, door, idle)
		if err != nil {
			return err
		}
		fmt.Printf("apiserver RSS per idle watch (%d watches from a listed version, fresh apiserver), %s: %.1f KiB\n", idle, door, kib)
	}
	s, err := start(ctx, bin)
	if err != nil {
		return err
	}
	defer s.stop()
	g, cs, dir, kaddr, ca, crt, key := s.g, s.cs, s.dir, s.kaddr, s.ca, s.crt, s.key
	// Create latency, the doors alternating in rounds of 50 so both see
	// the same machine load.
	pods := client.For[*v1.Pod](g)
	var lg, lh []time.Duration
	for i := 0; i < creates; i++ {
		t0 := time.Now()
		if _, err := pods.Create(ctx, &v1.Pod{Metadata: &v1.ObjectMeta{Name: fmt.Sprint("grpc-", i)},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36"}}}}); err != nil {
			return err
		}
		lg = append(lg, time.Since(t0))
		t0 = time.Now()
		if _, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("http-", i)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		lh = append(lh, time.Since(t0))
	}
	fmt.Printf("create latency, %d pods per door (interleaved):\n  gRPC        p50 %s p99 %s\n  HTTPS+JSON  p50 %s p99 %s\n",
		creates, pct(lg, 50), pct(lg, 99), pct(lh, 50), pct(lh, 99))

	// Watch delivery: watchers on both doors at once; each change is
	// timed from the start of its write to each watcher's receipt.
	dg, dh, err := watchLatency(ctx, g, cs, watchers, events)
	if err != nil {
		return err
	}
	fmt.Printf("watch delivery, %d watchers per door x %d changes:\n  gRPC        p50 %s p99 %s\n  HTTPS+JSON  p50 %s p99 %s\n",
		watchers, events, pct(dg, 50), pct(dg, 99), pct(dh, 50), pct(dh, 99))

	// kubectl invocations per second.
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		kc := filepath.Join(dir, "kubeconfig")
		if err := os.WriteFile(kc, []byte(fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://%s\", certificate-authority: %q}\nusers:\n- name: a\n  user: {client-certificate: %q, client-key: %q}\ncontexts:\n- name: c\n  context: {cluster: c, user: a}\ncurrent-context: c\n", kaddr, ca, crt, key)), 0o600); err != nil {
			return err
		}
		t0 := time.Now()
		for i := 0; i < kubectlRuns; i++ {
			c := exec.Command(kubectl, "get", "pods", "-o", "name")
			c.Env = append(os.Environ(), "KUBECONFIG="+kc, "HOME="+dir)
			out, err := c.Output()
			if err != nil || strings.Count(string(out), "\n") < 2*creates {
				return fmt.Errorf("kubectl get pods: %v (%d lines)", err, strings.Count(string(out), "\n"))
			}
		}
		el := time.Since(t0)
		fmt.Printf("kubectl get pods -o name (%d pods): %.1f invocations/s (%d in %s; discovery cached after the first)\n",
			2*creates, float64(kubectlRuns)/el.Seconds(), kubectlRuns, el.Round(time.Millisecond))
	} else {
		fmt.Println("kubectl get pods -o name: kubectl not found, not measured")
	}
	return nil
}

func watchLatency(ctx context.Context, g *client.Client, cs *kubernetes.Clientset, n, events int) (grpcLat, httpLat []time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	starts := sync.Map{}
	var done sync.WaitGroup
	record := func(out *[]time.Duration, name string) {
		if t0, ok := starts.Load(name); ok {
			mu.Lock()
			*out = append(*out, time.Since(t0.(time.Time)))
			mu.Unlock()
		}
	}
	for i := 0; i < n; i++ {
		w, err := client.For[*v1.ConfigMap](g).Watch(ctx, client.WatchOptions{Namespace: "default"})
		if err != nil {
			return nil, nil, err
		}
		hw, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, nil, err
		}
		done.Add(2)
		go func() {
			defer done.Done()
			for got := 0; got < events; {
				ev, err := w.Next()
				if err != nil {
					return
				}
				if ev.Type == "ADDED" && strings.HasPrefix(ev.Object.Metadata.Name, "w-") {
					record(&grpcLat, ev.Object.Metadata.Name)
					got++
				}
			}
		}()
		go func(hw watch.Interface) {
			defer done.Done()
			defer hw.Stop()
			for got := 0; got < events; {
				ev, ok := <-hw.ResultChan()
				if !ok {
					return
				}
				if cm, isCM := ev.Object.(*corev1.ConfigMap); isCM && ev.Type == watch.Added && strings.HasPrefix(cm.Name, "w-") {
					record(&httpLat, cm.Name)
					got++
				}
			}
		}(hw)
	}
	time.Sleep(time.Second)
	cms := client.For[*v1.ConfigMap](g)
	for i := 0; i < events; i++ {
		name := fmt.Sprint("w-", i)
		starts.Store(name, time.Now())
		if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: name}}); err != nil {
			return nil, nil, err
		}
		time.Sleep(5 * time.Millisecond)
	}
	waitCh := make(chan struct{})
	go func() { done.Wait(); close(waitCh) }()
	select {
	case <-waitCh:
	case <-time.After(60 * time.Second):
		return nil, nil, fmt.Errorf("watchers did not receive every event within 60s")
	}
	return grpcLat, httpLat, nil
}

func pct(d []time.Duration, p int) time.Duration { return stats.Percentile(d, p) }
