package localup

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
	"github.com/tugboat/tugboat/e2e/netlab"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// tools are the host's programs the script and the node need.
var tools = []string{"bash", "curl", "ip", "nft", "iptables", "iptables-save", "busybox"}

// The pod's hostPort is refused by the cluster's default Pod Security
// (baseline): its namespace is opened for it, as an admin would.
const manifest = `apiVersion: v1
kind: Namespace
metadata:
  name: hostports
  labels: {pod-security.kubernetes.io/enforce: privileged}
---
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: hostports
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: ` + images.BusyboxRef + `
    imagePullPolicy: Never
    command: ["sh", "-c", "echo ok > /data/index.html && exec httpd -f -p 80 -h /data"]
    ports: [{containerPort: 80, hostPort: 18080}]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    emptyDir: {medium: Memory}
---
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: hostports
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80}]
`

// TestLocalUpDownLeavesNothing runs hack/local-up.sh up, a pod and a
// Service on the node, then hack/local-up.sh down, and compares the host
// before and after.
func TestLocalUpDownLeavesNothing(t *testing.T) {
	requireHost(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := "tblu" + hex.EncodeToString(b)
	tmp := t.TempDir()
	state := filepath.Join(tmp, "state")
	bin := buildBinaries(t, filepath.Join(tmp, "bin"))
	// busybox for the pod, and the CRI runtime's sandbox (pause) image
	// (local-up would build it with the go tool, which has no network in
	// the lab host).
	importImage(t, filepath.Join(state, "kubelet", "images"), "busybox")
	importImage(t, filepath.Join(state, "kubelet", "images"), "pause")

	lab := netlab.NewForTest(t, netlab.Config{Hosts: 1})
	h := lab.Hosts[0]
	s := &snapshotter{h: h, id: id, state: state}
	before := s.take(t)

	mod, err := cluster.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	tugctlConfig := filepath.Join(tmp, "home", ".tugboat", "config")
	env := append(os.Environ(),
		"HOME="+filepath.Join(tmp, "home"),
		"TUGBOAT_STATE="+state,
		"TUGBOAT_BIN="+bin,
		"TUGBOAT_NODE_NAME="+id,
		"TUGBOAT_NODE_IP="+h.IP.String(),
		// Nothing answers there: the kubelet starts a containerd of its own.
		"TUGBOAT_CONTAINERD_SOCKET="+filepath.Join(tmp, "no-containerd.sock"),
		"TUGBOAT_CONTAINERD_NAMESPACE="+id,
		"TUGBOAT_CGROUP_ROOT=/"+id,
		"TUGBOAT_CONFIG="+tugctlConfig,
	)
	script := func(ctx context.Context, verb string) error {
		var out bytes.Buffer
		cmd := exec.Command(filepath.Join(mod, "hack", "local-up.sh"), verb)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &out
		err := h.Run(ctx, cmd)
		t.Logf("hack/local-up.sh %s:\n%s", verb, out.String())
		return err
	}
	downDone := false
	t.Cleanup(func() {
		if !downDone { // the test failed half-way: still leave nothing
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			_ = script(ctx, "down")
		}
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(state, "logs", "*.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("==== %s (last 3000 bytes) ====\n%s", filepath.Base(l), tail(b, 3000))
			}
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := script(ctx, "up"); err != nil {
		t.Fatal(err)
	}
	tugctl := func(args ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "tugctl"), args...)
		cmd.Env = []string{"TUGBOAT_CONFIG=" + tugctlConfig, "HOME=" + filepath.Join(tmp, "home")}
		out, err := h.Output(ctx, cmd)
		return string(out), err
	}
	wait.Eventually(t, time.Minute, "node "+id+" Ready", func() error {
		out, err := tugctl("get", "node", id, "-o", "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}")
		if err == nil && strings.TrimSpace(out) != "True" {
			err = fmt.Errorf("Ready is %q", out)
		}
		return err
	})
	mf := filepath.Join(tmp, "web.yaml")
	if err := os.WriteFile(mf, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := tugctl("apply", "-f", mf); err != nil {
		t.Fatalf("tugctl apply: %v\n%s", err, out)
	}
	wait.Eventually(t, 90*time.Second, "pod web Running", func() error {
		out, err := tugctl("get", "pod", "web", "-n", "hostports", "-o", "jsonpath={.status.phase}")
		if err == nil && strings.TrimSpace(out) != "Running" {
			err = fmt.Errorf("phase %q", out)
		}
		return err
	})
	wait.Eventually(t, 30*time.Second, "the pod's hostPort answering", func() error {
		out, err := h.Output(ctx, exec.Command("curl", "-fsS", "--max-time", "2", "http://"+h.IP.String()+":18080/"))
		if err == nil && strings.TrimSpace(string(out)) != "ok" {
			err = fmt.Errorf("got %q", out)
		}
		return err
	})

	// Up, the node has made what the comparison looks for: otherwise it
	// would compare nothing with nothing.
	during := s.take(t)
	for _, what := range []string{"links", "nftables", "mounts", "cgroups", "processes"} {
		if len(added(before[what], during[what])) == 0 {
			t.Errorf("with a pod running, nothing new among the %s: the snapshot looks in the wrong place", what)
		}
	}

	if err := script(ctx, "down"); err != nil {
		t.Fatal(err)
	}
	downDone = true
	after := s.take(t)
	for what := range before {
		if left := added(before[what], after[what]); len(left) > 0 {
			t.Errorf("left behind among the %s:\n  %s", what, strings.Join(left, "\n  "))
		}
		if gone := added(after[what], before[what]); len(gone) > 0 {
			t.Errorf("removed among the %s, though local-up did not make them:\n  %s", what, strings.Join(gone, "\n  "))
		}
	}
	if _, err := os.Stat(tugctlConfig); !os.IsNotExist(err) {
		t.Errorf("the tugctl config local-up wrote is still there (%v)", err)
	}
}

// requireHost skips (fails under CI=true) without root or a tool.
func requireHost(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a local cluster as root; skipped with -short")
	}
	if err := containerdtest.Check(); err != nil {
		containerdtest.SkipOrFail(t, err)
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			containerdtest.SkipOrFail(t, fmt.Errorf("%s not found: install it with hack/install-deps.sh", tool))
		}
	}
	if _, err := os.Stat("/usr/lib/cni/bridge"); err != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("CNI plugins not found in /usr/lib/cni: install containernetworking-plugins with hack/install-deps.sh"))
	}
}

// buildBinaries builds the binaries local-up starts, and tugctl, into dir.
func buildBinaries(t *testing.T, dir string) string {
	t.Helper()
	mod, err := cluster.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/apiserver", "./cmd/scheduler", "./cmd/controller-manager", "./cmd/kubelet", "./cmd/proxy", "./cmd/tugctl")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir
}

// importImage puts an image archive (deploy/images name) into the
// kubelet's import folder, which it imports from when it starts.
func importImage(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, name+".tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := images.Build(context.Background(), name, f, images.BuildOptions{}); err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
