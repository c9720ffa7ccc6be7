package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/kubeapi/kubectltest"
)

// TestComposeCluster is the CI end-to-end test of `make up`.
func TestComposeCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs a cluster; skipped with -short")
	}
	requireDocker(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	upCluster(t, ctx, e)
	walkthrough(t, ctx, e)
}

// upCluster runs make up for e (make down, with the test's images, when
// the test ends) and checks both nodes Ready through tugctl and kubectl.
func upCluster(t *testing.T, ctx context.Context, e *env) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command("docker", "ps", "-a", "--filter", "label=com.docker.compose.project="+e.project).CombinedOutput()
			t.Logf("containers:\n%s", out)
			for _, s := range append(e.controlServices(), "worker-1", "worker-2", "registry") {
				if id := e.container(s); id != "" {
					out, _ := exec.Command("docker", "logs", "--tail", "30", id).CombinedOutput()
					t.Logf("--- %s:\n%s", s, out)
				}
			}
		}
		// make down, with the test's images (their tag is the test's own).
		if out, err := e.script(context.Background(), nil, "down.sh", "--images"); err != nil {
			t.Errorf("make down: %v\n%s", err, out)
		}
		if left := e.leftovers(); len(left) > 0 {
			t.Errorf("make down left %v", left)
		}
	})

	start := time.Now()
	out, err := e.script(ctx, nil, "up.sh")
	if err != nil {
		t.Fatalf("make up: %v\n%s", err, out)
	}
	t.Logf("make up: %s\n%s", time.Since(start).Round(time.Second), lastLines(out, 8))

	nodes, err := e.tugctl(ctx, "get", "nodes", "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(nodes, " Ready "); n != 2 {
		t.Fatalf("after make up, nodes:\n%s", nodes)
	}
	// kubectl works right away with the kubeconfig make up wrote beside
	// the tugctl config.
	kc := exec.CommandContext(ctx, kubectltest.Path(t), "--kubeconfig", filepath.Join(filepath.Dir(e.config), "kubeconfig"), "get", "nodes", "--no-headers")
	if out, err := kc.CombinedOutput(); err != nil || strings.Count(string(out), " Ready ") != 2 {
		t.Fatalf("kubectl get nodes after make up: %v\n%s", err, out)
	}
}

// walkthrough is what a user does on a fresh cluster (the quick start),
// checked step by step: etcd closed to all but the apiservers, the web
// Deployment spread over both nodes and answering on each node's
// nodePort, tugctl logs, crictl on a node, a pod pulling from the cluster
// registry, a node container stopped and its pods replaced on the other.
func walkthrough(t *testing.T, ctx context.Context, e *env) {
	t.Helper()
	// etcd answers only the apiserver's client certificate: from an
	// apiserver's container (the one that shares etcd's network; a
	// running one, and a running member, under HA with some killed), a client
	// without one is refused over TLS, and plaintext is not served.
	api := e.container(e.runningService(e.apiservers()))
	etcd := e.runningService(e.etcdMembers())
	for url, want := range map[string]string{"https://" + etcd + ":2379/health": "certificate", "http://" + etcd + ":2379/health": ""} {
		out, err := exec.CommandContext(ctx, "docker", "exec", api, "tugboat-init", "probe", url).CombinedOutput()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("etcd at %s without a client certificate: err=%v, output %q (want a refusal mentioning %q)", url, err, out, want)
		}
		t.Logf("etcd at %s without a client certificate: %s", url, strings.TrimSpace(string(out)))
	}

	// The quick start.
	if _, err := e.tugctl(ctx, "apply", "-f", filepath.Join(e.module, "deploy", "examples", "web.yaml")); err != nil {
		t.Fatal(err)
	}
	var err error
	applied := time.Now()
	waitAvailable(t, ctx, e, 4)
	t.Logf("Deployment web available %s after apply", time.Since(applied).Round(100*time.Millisecond))
	pods := webPods(t, ctx, e)
	want := map[string]bool{}
	for _, n := range pods {
		want[n] = true
	}
	if len(want) != 2 {
		t.Errorf("web pods on %v, want both nodes (the scheduler spreads 4 replicas)", pods)
	}
	answered := map[string]bool{}
	for i, port := range e.nodePort {
		seen := answers(t, "127.0.0.1:"+strconv.Itoa(port), want, answered)
		t.Logf("nodePort 30080 of worker-%d (host port %d): answers from pods on %v", i+1, port, seen)
	}

	// tugctl logs through the apiserver and the kubelet's tunnel, of a
	// pod that answered (not every replica need have had a request).
	var pod string
	for p := range answered {
		pod = p
		break
	}
	// The request lines reach the log file shortly after the responses.
	err = wait.Until(ctx, 20*time.Second, func(ctx context.Context) error {
		logs, err := e.tugctl(ctx, "logs", pod)
		if err != nil {
			return err
		}
		if !strings.Contains(logs, "listening") || !strings.Contains(logs, "request") {
			return fmt.Errorf("tugctl logs %s = %q", pod, logs)
		}
		return nil
	})
	if err != nil {
		t.Errorf("want the start line and the requests: %v", err)
	}

	// The runtime layer seen with crictl on the node.
	for p, n := range pods {
		if n == "worker-1" {
			checkCrictl(t, ctx, e, p, n)
			break
		}
	}

	// A pod whose image the node pulls from the cluster's registry.
	if _, err := e.tugctl(ctx, "apply", "-f", filepath.Join(e.module, "deploy", "examples", "registry-pod.yaml")); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 2*time.Minute, "registry-check pulled and ran", func() error {
		out, err := e.tugctl(ctx, "logs", "registry-check")
		if err != nil || !strings.Contains(out, "pulled from the cluster registry") {
			desc, _ := e.tugctl(ctx, "describe", "pod", "registry-check")
			return fmt.Errorf("logs %q (%v)\n%s", out, err, lastLines(desc, 12))
		}
		return nil
	})

	// A node container dies: its pods come back on the other node.
	stopped := time.Now()
	if out, err := exec.CommandContext(ctx, "docker", "stop", e.container("worker-2")).CombinedOutput(); err != nil {
		t.Fatalf("docker stop worker-2: %v: %s", err, out)
	}
	wait.Eventually(t, 3*time.Minute, "the web pods replaced on worker-1", func() error {
		pods := webPods(t, ctx, e)
		ready, err := e.tugctl(ctx, "get", "deploy", "web", "--no-headers")
		if err != nil {
			return err
		}
		on1 := 0
		for _, n := range pods {
			if n == "worker-1" {
				on1++
			}
		}
		if f := strings.Fields(ready); on1 < 4 || len(f) < 4 || f[3] != "4" {
			return fmt.Errorf("pods %v; deployment %s", pods, strings.TrimSpace(ready))
		}
		return nil
	})
	t.Logf("pods of the stopped node replaced on worker-1 %s after docker stop", time.Since(stopped).Round(100*time.Millisecond))
	answers(t, "127.0.0.1:"+strconv.Itoa(e.nodePort[0]), map[string]bool{"worker-1": true}, map[string]bool{})
}

// waitAvailable waits until the web Deployment has n available replicas.
func waitAvailable(t *testing.T, ctx context.Context, e *env, n int) {
	t.Helper()
	wait.Eventually(t, 3*time.Minute, "Deployment web available", func() error {
		out, err := e.tugctl(ctx, "get", "deploy", "web", "--no-headers")
		if err != nil {
			return err
		}
		if f := strings.Fields(out); len(f) < 4 || f[3] != strconv.Itoa(n) {
			pods, _ := e.tugctl(ctx, "get", "pods", "-o", "wide")
			return fmt.Errorf("deployment %s\n%s", strings.TrimSpace(out), pods)
		}
		return nil
	})
}

// webPods maps the running web pods to their nodes.
func webPods(t *testing.T, ctx context.Context, e *env) map[string]string {
	t.Helper()
	out, err := e.tugctl(ctx, "get", "pods", "-l", "app=web", "-o", "wide", "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]string{}
	// RESTARTS of a restarted pod reads "1 (2m ago)", as kubectl's.
	lastRestart := regexp.MustCompile(`\([^)]* ago\)`)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(lastRestart.ReplaceAllString(line, "")); len(f) >= 7 && f[2] == "Running" {
			pods[f[0]] = f[6]
		}
	}
	return pods
}

// answers fetches addr (new connection each time) until pods on every
// node of want have answered; it returns the nodes seen.
func answers(t *testing.T, addr string, want, answered map[string]bool) []string {
	t.Helper()
	nodeRE := regexp.MustCompile(`node=(\S+)`)
	podRE := regexp.MustCompile(`pod=(\S+)`)
	hc := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	seen := map[string]bool{}
	wait.Eventually(t, time.Minute, "answers through "+addr+" from pods on every node", func() error {
		resp, err := hc.Get("http://" + addr + "/")
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if m := nodeRE.FindSubmatch(body); m != nil {
			seen[string(m[1])] = true
		}
		if m := podRE.FindSubmatch(body); m != nil {
			answered[string(m[1])] = true
		}
		for n := range want {
			if !seen[n] {
				return fmt.Errorf("pods on %v answered so far (last %q)", seen, body)
			}
		}
		return nil
	})
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// TestUpExplainsFailures: make up stops early, saying what and how to fix
// it, when compose is missing or a host port is taken.
func TestUpExplainsFailures(t *testing.T) {
	requireDocker(t)
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	skip := []string{"TUGBOAT_SKIP_BUILD=1"}

	out, err := e.script(ctx, append(skip, "TUGBOAT_COMPOSE=tugboat-no-such-compose"), "up.sh")
	if err == nil || !strings.Contains(out, "TUGBOAT_COMPOSE=tugboat-no-such-compose does not run") {
		t.Errorf("compose missing: err=%v, output:\n%s", err, out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(e.apiPort))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, err = e.script(ctx, skip, "up.sh")
	want := fmt.Sprintf("port %d on 127.0.0.1 (the apiserver) is taken", e.apiPort)
	if err == nil || !strings.Contains(out, want) || !strings.Contains(out, "TUGBOAT_API_PORT=<port> make up") {
		t.Errorf("port taken: err=%v, want %q and the fix in:\n%s", err, want, out)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("a refused make up left %v", left)
	}
}

// TestComposeFileValid: docker-compose.yaml parses with every compose
// installed here (v1 and v2), without images or build contexts.
func TestComposeFileValid(t *testing.T) {
	requireDocker(t)
	e := newEnv(t)
	tried := 0
	for _, c := range [][]string{{"docker-compose"}, {"docker", "compose"}} {
		if exec.Command(c[0], append(c[1:], "version")...).Run() != nil {
			continue
		}
		tried++
		args := append(c[1:], "-p", e.project, "-f", filepath.Join(e.module, "docker-compose.yaml"), "config", "--services")
		cmd := exec.Command(c[0], args...)
		cmd.Env = e.vars()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s config: %v\n%s", strings.Join(c, " "), err, out)
			continue
		}
		got := strings.Fields(string(out))
		sort.Strings(got)
		want := []string{"apiserver", "controller-manager", "etcd", "pki", "registry", "scheduler", "worker-1", "worker-2"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s config --services = %v, want %v", strings.Join(c, " "), got, want)
		}
		args = append(c[1:], "-p", e.project, "-f", filepath.Join(e.module, "deploy", "docker", "docker-compose.ha.yaml"), "--project-directory", e.module, "config", "--services")
		cmd = exec.Command(c[0], args...)
		cmd.Env = e.vars()
		out, err = cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s config of the HA file: %v\n%s", strings.Join(c, " "), err, out)
			continue
		}
		got = strings.Fields(string(out))
		sort.Strings(got)
		want = []string{"apiserver-1", "apiserver-2", "controller-manager-1", "controller-manager-2", "etcd-1", "etcd-2", "etcd-3",
			"pki", "registry", "scheduler-1", "scheduler-2", "worker-1", "worker-2"}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s config --services of the HA file = %v, want %v", strings.Join(c, " "), got, want)
		}
	}
	if tried == 0 {
		t.Skip("no compose installed")
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestComposeFilesAgree: deploy/docker/docker-compose.ha.yaml is
// docker-compose.yaml but for what HA changes (the members and replicas,
// their commands, ports, host names and start order, the nodes'
// --server): every service of the HA file, with those left out, is the
// same as its counterpart in the plain file, as compose resolves both.
func TestComposeFilesAgree(t *testing.T) {
	requireDocker(t)
	e := newEnv(t)
	resolve := func(file string) map[string]map[string]any {
		c := []string{"docker-compose"}
		if exec.Command(c[0], "version").Run() != nil {
			c = []string{"docker", "compose"}
		}
		cmd := exec.Command(c[0], append(c[1:], "-p", e.project, "-f", file, "--project-directory", e.module, "config")...)
		cmd.Env = e.vars()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s config: %v", file, err)
		}
		var doc struct {
			Services map[string]map[string]any `json:"services"`
		}
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%s config: %v", file, err)
		}
		return doc.Services
	}
	plain := resolve(filepath.Join(e.module, "docker-compose.yaml"))
	ha := resolve(filepath.Join(e.module, "deploy", "docker", "docker-compose.ha.yaml"))
	servers := regexp.MustCompile(`apiserver-1:6443,apiserver-2:6443`)
	counterpart := regexp.MustCompile(`-[0-9]$`)
	for name, svc := range ha {
		base := name
		if _, ok := plain[name]; !ok {
			base = counterpart.ReplaceAllString(name, "")
		}
		want, ok := plain[base]
		if !ok {
			t.Errorf("HA service %s has no counterpart in docker-compose.yaml", name)
			continue
		}
		strip := func(s map[string]any) string {
			c := map[string]any{}
			for k, v := range s {
				switch k {
				case "command", "ports", "hostname", "depends_on", "container_name":
					continue
				case "volumes":
					if strings.HasPrefix(base, "etcd") {
						continue // its own data volume per member
					}
				}
				c[k] = v
			}
			b, _ := json.Marshal(c)
			return servers.ReplaceAllString(string(b), "apiserver:6443")
		}
		if got, want := strip(svc), strip(want); got != want {
			t.Errorf("HA service %s differs from %s of docker-compose.yaml beyond what HA changes:\n HA:    %s\n plain: %s", name, base, got, want)
		}
	}
}
