package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
	"github.com/tugboat/tugboat/internal/syncbuf"
)

// proxy is the proxy process of one node.
type proxy struct {
	node *cluster.Node
	proc *netlab.Proc
	log  string
}

// startProxies starts the proxy on every node and waits until each serves
// /healthz (its caches synced).
func startProxies(t *testing.T, c *cluster.Cluster) []*proxy {
	t.Helper()
	var out []*proxy
	for _, n := range c.Nodes {
		p := &proxy{node: n, log: filepath.Join(c.LogDir, "proxy-"+n.Name+".log")}
		f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(proxyBin, append(c.ClientArgs("proxy"),
			"--node-name", n.Name, "--node-ip", n.IP.String(), "--cluster-cidr", c.ClusterCIDR.String(),
			"--metrics-listen", metricsAddrOfProxy(n),
			// Names outside the cluster are not part of these tests: a
			// closed port on the host answers SERVFAIL at once.
			"--upstream-dns", "127.0.0.1:9")...)
		cmd.Stdout, cmd.Stderr = f, f
		p.proc, err = n.Host.Start(context.Background(), cmd)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	t.Cleanup(func() {
		for _, p := range out {
			if !p.proc.Exited() {
				_ = p.proc.Signal(syscall.SIGTERM)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if p.proc.Wait(ctx) != nil && !p.proc.Exited() {
					_ = p.proc.Kill()
				}
				cancel()
			}
			if t.Failed() {
				t.Logf("==== last lines of %s ====\n%s", p.log, tailFile(p.log, 30))
			}
		}
	})
	for _, p := range out {
		wait.Eventually(t, 30*time.Second, "proxy on "+p.node.Name+" healthy", func() error {
			if p.proc.Exited() {
				return fmt.Errorf("proxy on %s exited:\n%s", p.node.Name, tailFile(p.log, 30))
			}
			resp, err := http.Get("http://" + metricsAddrOfProxy(p.node) + "/healthz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("healthz %s", resp.Status)
			}
			return nil
		})
	}
	return out
}

func metricsAddrOfProxy(n *cluster.Node) string { return n.IP.String() + ":10249" }

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// tugctl runs the tugctl binary as the cluster's admin.
type tugctl struct {
	c *cluster.Cluster
}

func (k tugctl) args(args ...string) []string {
	pki := k.c.PKIDir()
	return append([]string{"--server", k.c.Server, "--ca-file", filepath.Join(pki, "ca.crt"),
		"--cert-file", filepath.Join(pki, "admin.crt"), "--key-file", filepath.Join(pki, "admin.key")}, args...)
}

// run runs a command line and returns its stdout; a failure is returned
// with stderr.
func (k tugctl) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tugctlBin, k.args(args...)...)
	cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("tugctl %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// traceReport is the documented JSON of `tugctl trace -o json`
// (cmd/tugctl/README.md), decoded the way a script would.
type traceReport struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node"`
	Summary   string `json:"summary"`
	OK        bool   `json:"ok"`
	Hops      []struct {
		Hop           string     `json:"hop"`
		Title         string     `json:"title"`
		Layer         string     `json:"layer"`
		Component     string     `json:"component"`
		Node          string     `json:"node"`
		Status        string     `json:"status"`
		Time          *time.Time `json:"time"`
		SincePrevious *float64   `json:"since_previous_seconds"`
		Reason        string     `json:"reason"`
		Message       string     `json:"message"`
	} `json:"hops"`
	StuckAt   string `json:"stuck_at"`
	Layer     string `json:"layer"`
	Component string `json:"component"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	Hint      string `json:"hint"`
}

func (r traceReport) String() string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}

// trace runs `tugctl trace KIND NAME -o json`.
func (k tugctl) trace(kind, name string) (traceReport, error) {
	out, err := k.run("trace", kind, name, "-o", "json")
	if err != nil {
		return traceReport{}, err
	}
	var r traceReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return r, fmt.Errorf("trace -o json: %v\n%s", err, out)
	}
	return r, nil
}

// waitTrace polls the trace until it names stuckAt, layer and reason (and
// the message contains msg), and returns it.
func (k tugctl) waitTrace(t *testing.T, timeout time.Duration, kind, name, stuckAt, layer, reason, msg string) traceReport {
	t.Helper()
	var r traceReport
	wait.Eventually(t, timeout, fmt.Sprintf("trace %s %s stuck at %s, layer %s, reason %s", kind, name, stuckAt, layer, reason), func() error {
		var err error
		if r, err = k.trace(kind, name); err != nil {
			return err
		}
		if r.OK || r.StuckAt != stuckAt || r.Layer != layer || r.Reason != reason || !strings.Contains(r.Message, msg) {
			return fmt.Errorf("got %s", r)
		}
		return nil
	})
	return r
}

// scrape reads a /metrics page and returns the sum of the samples of
// name whose labels include every one of want ("k=v").
func scrape(addr, name string, want ...string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	found := false
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "#") || !strings.HasPrefix(line, name) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		series, val := line[:i], line[i+1:]
		labels := ""
		if j := strings.IndexByte(series, '{'); j >= 0 {
			if series[:j] != name {
				continue
			}
			labels = series[j:]
		} else if series != name {
			continue
		}
		ok := true
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			ok = ok && strings.Contains(labels, k+`="`+v+`"`)
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %v", addr, line, err)
		}
		sum += f
		found = true
	}
	if !found {
		return 0, fmt.Errorf("%s has no %s%v", addr, name, want)
	}
	return sum, s.Err()
}

// waitMetric waits until the metric is at least min.
func waitMetric(t *testing.T, addr, name string, min float64, labels ...string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, fmt.Sprintf("%s%v >= %v at %s", name, labels, min, addr), func() error {
		v, err := scrape(addr, name, labels...)
		if err != nil {
			return err
		}
		if v < min {
			return fmt.Errorf("%s%v = %v", name, labels, v)
		}
		return nil
	})
}

// background runs a long tugctl command (get -w) whose output is read
// while it runs.
type background struct {
	syncbuf.Buffer
	cmd *exec.Cmd
}

func (k tugctl) start(t *testing.T, args ...string) *background {
	t.Helper()
	b := &background{}
	b.cmd = exec.Command(tugctlBin, k.args(args...)...)
	b.cmd.Env = append(os.Environ(), "HOME="+os.TempDir())
	b.cmd.Stdout, b.cmd.Stderr = b, b
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.cmd.Process.Kill(); _ = b.cmd.Wait() })
	return b
}

// Objects.

func busybox(name string, labels map[string]string, script string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: &v1.PodSpec{
			TerminationGracePeriodSeconds: proto.Int64(1),
			Containers: []*v1.Container{{Name: "main", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent",
				Command: []string{"sh", "-c", script}}},
		},
	}
}

func execProbe(cmd ...string) *v1.Probe {
	return &v1.Probe{Exec: &v1.ExecAction{Command: cmd}, PeriodSeconds: 1, FailureThreshold: 1, TimeoutSeconds: 2}
}

func echoDeployment(name string, replicas int32, tolerate int64) *v1.Deployment {
	labels := map[string]string{"app": name}
	d := &v1.Deployment{
		Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(replicas),
			Selector: &v1.LabelSelector{MatchLabels: labels},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: labels},
				Spec: &v1.PodSpec{
					TerminationGracePeriodSeconds: proto.Int64(1),
					Containers: []*v1.Container{{
						Name: "echo", Image: images.EchoRef, ImagePullPolicy: "IfNotPresent",
						Env:   []*v1.EnvVar{{Name: "PORT", Value: "8080"}},
						Ports: []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: "http"},
							PeriodSeconds: 1, FailureThreshold: 1},
					}},
				},
			},
		},
	}
	if tolerate > 0 {
		for _, key := range []string{"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"} {
			d.Spec.Template.Spec.Tolerations = append(d.Spec.Template.Spec.Tolerations,
				&v1.Toleration{Key: key, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: proto.Int64(tolerate)})
		}
	}
	return d
}

func service(name string, selector map[string]string) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.ServiceSpec{Selector: selector, Ports: []*v1.ServicePort{{Name: "http", Port: 80, TargetPort: "8080"}}}}
}
