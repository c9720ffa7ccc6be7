package services

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
)

// proxy is the proxy process of one node.
type proxy struct {
	c    *cluster.Cluster
	node *cluster.Node
	proc *netlab.Proc
	log  string
}

func proxyArgs(c *cluster.Cluster, n *cluster.Node) []string {
	return append(c.ClientArgs("proxy"),
		"--node-name", n.Name,
		"--node-ip", n.IP.String(),
		"--cluster-cidr", c.ClusterCIDR.String(),
		"--metrics-listen", n.IP.String()+":10249",
		// Names outside the cluster are not part of these tests: forward
		// them to a closed port on the host (SERVFAIL at once) rather than
		// anywhere off the machine.
		"--upstream-dns", "127.0.0.1:9",
		"--log-level", "debug")
}

// startProxy starts the proxy on n and waits until it has synced.
func startProxy(t *testing.T, c *cluster.Cluster, n *cluster.Node) *proxy {
	t.Helper()
	p := &proxy{c: c, node: n, log: filepath.Join(c.LogDir, "proxy-"+n.Name+".log")}
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "==== proxy started %s ====\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(proxyBin, proxyArgs(c, n)...)
	cmd.Stdout, cmd.Stderr = f, f
	p.proc, err = n.Host.Start(context.Background(), cmd)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the proxy on "+n.Name+" healthy", func() error {
		if p.proc.Exited() {
			return fmt.Errorf("proxy on %s exited; see %s:\n%s", n.Name, p.log, tailFile(p.log, 30))
		}
		resp, err := http.Get("http://" + n.IP.String() + ":10249/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("healthz %s", resp.Status)
		}
		_, err = p.table(context.Background())
		return err
	})
	return p
}

// stop stops the proxy with SIGTERM and waits.
func (p *proxy) stop(t *testing.T) {
	t.Helper()
	if p.proc.Exited() {
		return
	}
	_ = p.proc.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.proc.Wait(ctx); err != nil && !p.proc.Exited() {
		_ = p.proc.Kill()
		t.Errorf("proxy on %s did not stop on SIGTERM", p.node.Name)
	}
}

// host runs a command on the proxy's host and returns its output.
func host(ctx context.Context, n *cluster.Node, name string, args ...string) (string, error) {
	out, err := n.Host.Output(ctx, exec.Command(name, args...))
	return string(out), err
}

// table lists the proxy's nftables table on its host.
func (p *proxy) table(ctx context.Context) (string, error) {
	return host(ctx, p.node, "nft", "list", "table", "ip", "tugboat")
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// execIn runs a command in a pod's first container through the
// apiserver's relay and returns its output (stdout and stderr) and exit
// code.
func execIn(t *testing.T, c *client.Client, ns, pod string, timeout time.Duration, cmd ...string) (string, int32) {
	t.Helper()
	api := v1.NewNodeAPIClient(c.Conn())
	es, err := api.Exec(ctxFor(t, timeout))
	if err != nil {
		t.Fatal(err)
	}
	if err := es.Send(&v1.ExecInput{Start: &v1.ExecStart{Namespace: ns, Pod: pod, Command: cmd}}); err != nil {
		t.Fatal(err)
	}
	if err := es.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		m, err := es.Recv()
		if err == io.EOF {
			return out.String(), -1
		}
		if err != nil {
			t.Fatalf("exec %v in %s/%s: %v after %q", cmd, ns, pod, err, out.String())
		}
		out.Write(m.Stdout)
		out.Write(m.Stderr)
		if m.Exited {
			return out.String(), m.ExitCode
		}
	}
}

func fieldEnv(name, path string) *v1.EnvVar {
	return &v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
}

// echoDeployment is n echo servers labelled app=name, serving on the
// container port named http (8080), Ready once /healthz answers.
func echoDeployment(name string, n int32) *v1.Deployment {
	labels := map[string]string{"app": name}
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(n),
			Selector: &v1.LabelSelector{MatchLabels: labels},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: labels},
				Spec: &v1.PodSpec{
					TerminationGracePeriodSeconds: proto.Int64(1),
					Containers: []*v1.Container{{
						Name: "echo", Image: images.EchoRef, ImagePullPolicy: "IfNotPresent",
						Env:   []*v1.EnvVar{{Name: "PORT", Value: "8080"}, fieldEnv("POD_NAME", "metadata.name"), fieldEnv("NODE_NAME", "spec.nodeName")},
						Ports: []*v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
						ReadinessProbe: &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/healthz", Port: "http"},
							PeriodSeconds: 1, FailureThreshold: 1},
					}},
				},
			},
		},
	}
}

// busyboxPod runs script in busybox, on node if not empty.
func busyboxPod(name, node string, labels map[string]string, script string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: &v1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: proto.Int64(1),
			Containers: []*v1.Container{{Name: "main", Image: images.BusyboxRef, ImagePullPolicy: "IfNotPresent",
				Command: []string{"sh", "-c", script}}},
		},
	}
}

func service(name, typ string, selector map[string]string, port int32, target string) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.ServiceSpec{Type: typ, Selector: selector,
			Ports: []*v1.ServicePort{{Name: "http", Port: port, TargetPort: target}}}}
}

func isReady(p *v1.Pod) bool {
	for _, c := range p.GetStatus().GetConditions() {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// waitPodReady waits for a pod to be Ready and returns it.
func waitPodReady(t *testing.T, c *client.Client, name string) *v1.Pod {
	t.Helper()
	var p *v1.Pod
	wait.Eventually(t, 90*time.Second, "pod "+name+" Ready", func() error {
		var err error
		p, err = client.For[*v1.Pod](c).Get(context.Background(), "default", name)
		if err != nil {
			return err
		}
		if !isReady(p) {
			return fmt.Errorf("pod %s not Ready: %v", name, p.GetStatus())
		}
		return nil
	})
	return p
}

// readyEndpoints returns the pod names of a Service's ready endpoints.
func readyEndpoints(ctx context.Context, c *client.Client, name string) ([]string, error) {
	e, err := client.For[*v1.Endpoints](c).Get(ctx, "default", name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range e.Subsets {
		for _, a := range s.Addresses {
			out = append(out, a.GetTargetRef().GetName())
		}
	}
	return out, nil
}

// getFn is a shell function for busybox: get NAME PORT resolves NAME with
// nslookup (which reads the pod's resolv.conf: nameserver 10.96.0.10 and
// the search path <ns>.svc.cluster.local svc.cluster.local cluster.local)
// and sends GET / to ADDRESS:PORT with nc, printing the answer. Busybox's
// wget cannot be used: Debian's static busybox is linked with glibc, and
// its wget crashes (segmentation fault) in a container without the NSS
// libraries, whatever the URL; nslookup and nc do not use NSS.
const getFn = `get() {
  ip=$(nslookup "$1" 2>/dev/null | sed -n '/^Name:/{n;s/^Address: *//p;q;}')
  if [ -z "$ip" ]; then echo "FAILED no address for $1"; return 1; fi
  printf 'GET / HTTP/1.0\r\nHost: %s\r\n\r\n' "$1" | nc -w 3 "$ip" "$2" 2>&1
}
`

// fetch runs `get name port` once in a pod.
func fetch(t *testing.T, c *client.Client, pod, name string, port int) (string, int32) {
	t.Helper()
	return execIn(t, c, "default", pod, time.Minute, "sh", "-c", getFn+fmt.Sprintf("get %s %d", name, port))
}

// answers makes n requests to name:port from the pod, resolving the name
// each time, and counts the answering pods by name; anything else counts
// as "FAILED".
func answers(t *testing.T, c *client.Client, pod, name string, port, n int) map[string]int {
	t.Helper()
	script := getFn + fmt.Sprintf(`i=0; while [ $i -lt %d ]; do
  out=$(get %s %d); echo "$out" | grep -o 'pod=[^ ]*' || echo "FAILED $(echo $out | tr -d '\r')"
  i=$((i+1)); done`, n, name, port)
	out, code := execIn(t, c, "default", pod, 5*time.Minute, "sh", "-c", script)
	if code != 0 {
		t.Fatalf("request loop exited %d: %s", code, out)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name := "FAILED"
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "pod="); ok {
				name = v
			}
		}
		counts[name]++
		if name == "FAILED" && counts[name] <= 3 {
			t.Logf("failed request: %s", line)
		}
	}
	return counts
}

func nodeReady(n *v1.Node) bool {
	for _, c := range n.GetStatus().GetConditions() {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}
