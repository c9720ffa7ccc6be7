package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// BenchmarkIngressVsDirectNetns is the Ingress benchmark: wrk in
// the lab's peer host (a client outside the node) against a pod-like
// backend process — deploy/examples/echo, the quick-start's server, in a
// pod network namespace behind the node's bridge — once straight at the
// pod's IP (routed by the node's kernel) and once through the real
// proxy's Ingress listener on the node's address (proxy.Run with
// --ingress-listen 0.0.0.0:80 in the node's namespace: host rule,
// reverse proxy, keep-alive connections to the endpoint), in the same run.
//
// Two backends, each measured both ways:
//   - cpu-bound: echo without a limit. Client, proxy and backend share the
//     machine's cores, so the proxy's extra HTTP server and client hop is
//     paid from the same CPU the backend needs: this measures the proxy's
//     CPU cost, not a cluster's throughput.
//   - limit-500m, limit-100m: echo in a cgroup with a CPU limit (cpu cfs
//     quota 50ms or 10ms per 100ms, as a pod's resources.limits.cpu), so
//     that the backend, not the machine, bounds the rate, as it does in a
//     cluster where pods have limits and the proxy has cores of its own.
//
// Each case runs wrk -t1 -c64 for 1s (warm-up, not counted) then 5s, and
// reports req/s and p99 (wrk's), and the CPU per request of the backend,
// of wrk, and of this process (the proxy; also the idle apiserver, etcd
// and informers, which is what the direct case's figure is).
//
//	flock /tmp/tugboat-bench.lock go test -run '^$' -bench IngressVsDirectNetns -benchtime 1x -count 3 ./proxy/
//
// It needs root and wrk (apt-get install wrk); without wrk it skips.
func BenchmarkIngressVsDirectNetns(b *testing.B) {
	nstest.RequireRoot(b)
	if _, err := exec.LookPath("wrk"); err != nil {
		b.Skip("needs wrk (apt-get install wrk)")
	}
	echo := filepath.Join(b.TempDir(), "echo")
	if out, err := exec.Command("go", "build", "-o", echo, "github.com/tugboat/tugboat/deploy/examples/echo").CombinedOutput(); err != nil {
		b.Fatalf("building the echo server: %v\n%s", err, out)
	}
	srv := apiservertest.Start(b)
	ctx := context.Background()
	l := nstest.NewLab(b, 1)
	if _, err := client.For[*v1.Node](srv.Client).Create(ctx, node("node-a", nstest.PodCIDR, nstest.NodeIP)); err != nil {
		b.Fatal(err)
	}
	if _, err := client.For[*v1.Service](srv.Client).Create(ctx, service("web", 80)); err != nil {
		b.Fatal(err)
	}
	if _, err := client.For[*v1.EndpointSlice](srv.Client).Create(ctx, endpoints("web", nstest.PodIP(0))); err != nil {
		b.Fatal(err)
	}
	createIngress(b, srv.Client, "bench.example.com", "/")
	p := start(b, srv.Client, l, func(c *Config) { c.IngressListen = "0.0.0.0:80" })
	defer p.stop(b)

	direct := "http://" + nstest.PodIP(0) + ":8080/bench"
	ingress := "http://" + nstest.NodeIP + "/bench"
	for _, mode := range []struct {
		name  string
		quota int // cpu.cfs_quota_us per 100ms; 0: no limit
	}{{"cpu-bound", 0}, {"limit-500m", 50000}, {"limit-100m", 10000}} {
		b.Run(mode.name, func(b *testing.B) {
			pid := startEcho(b, l.Pods[0], echo, mode.quota)
			waitHTTP(b, l.Peer, direct)
			waitHTTP(b, l.Peer, ingress)
			var res [2]wrkResult
			for i, target := range []string{direct, ingress} {
				b.Run([]string{"direct", "ingress"}[i], func(b *testing.B) {
					for range b.N {
						res[i] = runWrk(b, l.Peer, l.Pods[0], target, pid)
					}
					r := res[i]
					b.ReportMetric(r.rps, "req/s")
					b.ReportMetric(r.p99.Seconds()*1000, "p99-ms")
					b.ReportMetric(r.backendCPU, "backend-cpu-us/req")
					b.ReportMetric(r.backendSys, "backend-sys-us/req")
					b.ReportMetric(r.proxyCPU, "proxy-cpu-us/req")
					b.ReportMetric(r.wrkCPU, "wrk-cpu-us/req")
					b.ReportMetric(float64(r.accepts), "backend-accepts")
				})
			}
			if res[0].rps > 0 {
				b.Logf("%s: ingress/direct req/s %.2fx (%.0f / %.0f), p99 %v vs %v", mode.name, res[1].rps/res[0].rps, res[1].rps, res[0].rps, res[1].p99, res[0].p99)
			}
		})
	}
}

// startEcho runs the echo server on port 8080 in ns, under a CPU quota
// (µs per 100ms) when quota > 0, stopped when b ends; it returns its PID.
func startEcho(b *testing.B, ns *nstest.NS, bin string, quota int) int {
	b.Helper()
	cmd := exec.Command(bin, "-port", "8080")
	cmd.Env = []string{"POD_NAME=bench", "POD_IP=" + nstest.PodIP(0), "NODE_NAME=node-a"}
	var dir string
	if quota > 0 {
		dir = fmt.Sprintf("/sys/fs/cgroup/cpu/tugboat-bench-ingress-%d", os.Getpid())
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Skipf("no cgroup v1 cpu controller to limit the backend: %v", err)
		}
	}
	if err := ns.Do(cmd.Start); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if dir != "" {
			if err := os.Remove(dir); err != nil {
				b.Errorf("removing %s: %v", dir, err)
			}
		}
	})
	if dir != "" {
		for _, fv := range [][2]string{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.Itoa(quota)}, {"cgroup.procs", strconv.Itoa(cmd.Process.Pid)}} {
			if err := os.WriteFile(filepath.Join(dir, fv[0]), []byte(fv[1]), 0o644); err != nil {
				b.Fatalf("%s/%s: %v", dir, fv[0], err)
			}
		}
	}
	return cmd.Process.Pid
}

// waitHTTP waits until url answers 200 from ns with Host
// bench.example.com.
func waitHTTP(b *testing.B, ns *nstest.NS, url string) {
	b.Helper()
	hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(_ context.Context, network, addr string) (net.Conn, error) {
			return ns.Dial(network, addr, 2*time.Second)
		}}}
	wait.Eventually(b, 30*time.Second, url+" answering", func() error {
		req, _ := http.NewRequest("GET", url, nil)
		req.Host = "bench.example.com"
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "pod=bench") {
			return fmt.Errorf("%d %q", resp.StatusCode, body)
		}
		return nil
	})
}

type wrkResult struct {
	rps                          float64
	p99                          time.Duration
	backendCPU, proxyCPU, wrkCPU float64 // µs per request
	backendSys                   float64 // of backendCPU, in the kernel
	accepts                      int64   // connections the backend accepted (keep-alive: about 64)
}

// runWrk runs wrk from ns against url (1s warm-up, then 5s measured) and
// the CPU the backend (pid), this process and wrk used in the 5s.
func runWrk(b *testing.B, ns, pod *nstest.NS, url string, backend int) wrkResult {
	b.Helper()
	wrk := func(d string) (string, time.Duration) {
		cmd := exec.Command("wrk", "-t1", "-c64", "-d"+d, "--latency", "-H", "Host: bench.example.com", url)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := ns.Do(cmd.Start); err != nil {
			b.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			b.Fatalf("wrk: %v\n%s", err, out.String())
		}
		return out.String(), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	wrk("1s")
	be0, sys0 := procCPU(b, backend)
	self0, acc0 := selfCPU(), passiveOpens(b, pod)
	out, wrkCPU := wrk("5s")
	be, sys := procCPU(b, backend)
	be, sys, self := be-be0, sys-sys0, selfCPU()-self0
	r := wrkResult{accepts: passiveOpens(b, pod) - acc0}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			r.rps, _ = strconv.ParseFloat(f[1], 64)
		case len(f) == 2 && f[0] == "99%":
			r.p99 = wrkDuration(f[1])
		case len(f) > 0 && (f[0] == "Non-2xx" || f[0] == "Socket"):
			b.Errorf("wrk %s: %s", url, sc.Text())
		}
	}
	if r.rps == 0 || r.p99 == 0 {
		b.Fatalf("wrk %s: no Requests/sec or 99%% line in\n%s", url, out)
	}
	n := r.rps * 5
	r.backendCPU = float64(be.Microseconds()) / n
	r.backendSys = float64(sys.Microseconds()) / n
	r.proxyCPU = float64(self.Microseconds()) / n
	r.wrkCPU = float64(wrkCPU.Microseconds()) / n
	return r
}

// wrkDuration parses wrk's "812.00us", "3.45ms", "1.02s".
func wrkDuration(s string) time.Duration {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0
			}
			return time.Duration(f * float64(u.unit))
		}
	}
	return 0
}

// passiveOpens is the TCP connections accepted in ns so far (Tcp:
// PassiveOpens of its /proc/net/snmp).
func passiveOpens(b *testing.B, ns *nstest.NS) int64 {
	b.Helper()
	var raw []byte
	if err := ns.Do(func() (err error) { raw, err = os.ReadFile("/proc/thread-self/net/snmp"); return err }); err != nil {
		b.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Tcp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "PassiveOpens" && i < len(f) {
				v, _ := strconv.ParseInt(f[i], 10, 64)
				return v
			}
		}
	}
	b.Fatalf("no Tcp: PassiveOpens in %s's /proc/net/snmp", ns.Name)
	return 0
}

// procCPU is the user+system CPU time of process pid so far, and of it
// the system time.
func procCPU(b *testing.B, pid int) (total, sys time.Duration) {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name's closing parenthesis: utime and
	// stime are the 14th and 15th of the whole line, in clock ticks.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, time.Duration(st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// selfCPU is this process's user+system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
