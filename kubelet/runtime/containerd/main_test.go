package containerd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/network/networktest"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"

	"github.com/tugboat/tugboat/internal/netns"
)

// testCIDR is this package's pod CIDR; other packages' tests use others.
const testCIDR = "10.244.200.0/24"

// The private containerd and the runtime on it, shared by the tests;
// skipReason says why they are nil.
var (
	testContainerd *containerdtest.Containerd
	testRuntime    *Runtime
	busyboxArchive []byte
	skipReason     error
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse() // for testing.Short
	if skipReason = containerdtest.Check(); skipReason != nil || testing.Short() {
		return m.Run() // each test skips (or fails in CI) with the reason
	}
	dir, err := os.MkdirTemp("", "tugboat-containerd-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	testContainerd, err = containerdtest.Start(ctx, containerdtest.Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testContainerd.Stop()
	// A cgroup parent of the run's own, removed at the end.
	cgroupParent := "/tugboat-test-" + randHex(4)
	defer runtime.RemoveCgroup(cgroupParent)
	testRuntime, err = New(Config{Address: testContainerd.Address, KillTimeout: 5 * time.Second, CgroupParent: cgroupParent}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testRuntime.Close()

	var buf bytes.Buffer
	if err := images.Build(ctx, "busybox", &buf, images.BuildOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	busyboxArchive = buf.Bytes()
	if _, err := testRuntime.ImportImage(ctx, bytes.NewReader(busyboxArchive)); err != nil {
		fmt.Fprintln(os.Stderr, "import busybox:", err)
		return 1
	}
	return m.Run()
}

// env is one test's runtime, network and pod directory.
type env struct {
	t   testing.TB
	rt  *Runtime
	net *networktest.Network
	dir string
}

func newEnv(t testing.TB) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a private containerd, runc and CNI plugins; skipped with -short")
	}
	if skipReason != nil {
		containerdtest.SkipOrFail(t, skipReason)
	}
	return &env{t: t, rt: testRuntime, net: networktest.New(t, testCIDR), dir: t.TempDir()}
}

// pod is a sandbox with its network, made by env.runPod.
type pod struct {
	ID    string
	Name  string
	UID   string
	IP    netip.Addr
	NetNS string
	Dir   string
}

// runPod makes a pod the way the kubelet will: netns, sandbox, CNI ADD,
// /etc files. Its teardown (containers, CNI DEL, netns, sandbox) is
// registered as a cleanup, and also checked by the tests that care.
func (e *env) runPod(name string, mod ...func(*runtime.SandboxConfig)) *pod {
	e.t.Helper()
	ctx := context.Background()
	p := &pod{Name: name, UID: randHex(8)}
	p.Dir = filepath.Join(e.dir, p.UID)
	var err error
	if p.NetNS, err = e.net.CreateNetNS("tugboat-test-" + p.UID); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = netns.Remove(p.NetNS) })

	cfg := runtime.SandboxConfig{
		Pod:       runtime.PodRef{Namespace: "default", Name: name, UID: p.UID},
		Hostname:  name,
		NetNSPath: p.NetNS,
		Labels:    map[string]string{"app": name},
		EtcFiles:  runtime.EtcFilesIn(filepath.Join(p.Dir, "etc")),
	}
	for _, f := range mod {
		f(&cfg)
	}
	if p.ID, err = e.rt.RunPodSandbox(ctx, cfg); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { e.teardown(p) })
	if p.IP, err = e.net.SetUpPod(ctx, e.podNetwork(p)); err != nil {
		e.t.Fatal(err)
	}
	if _, err = runtime.WriteEtcFiles(filepath.Join(p.Dir, "etc"), runtime.PodEtc{
		Hostname: name,
		IPs:      []string{p.IP.String()},
		DNS:      runtime.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []string{"ndots:5"}},
	}); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) podNetwork(p *pod) network.PodNetwork {
	return network.PodNetwork{ID: p.ID, NetNSPath: p.NetNS, Namespace: "default", Name: p.Name, UID: p.UID}
}

// teardown is the kubelet's teardown order: stop the sandbox (kills its
// containers), CNI DEL, delete the netns, remove the sandbox.
func (e *env) teardown(p *pod) {
	ctx := context.Background()
	if err := e.rt.StopPodSandbox(ctx, p.ID); err != nil {
		e.t.Errorf("stop sandbox: %v", err)
	}
	if err := e.net.TearDownPod(ctx, e.podNetwork(p)); err != nil {
		e.t.Errorf("CNI DEL: %v", err)
	}
	if err := e.net.DeleteNetNS(p.NetNS); err != nil {
		e.t.Errorf("delete netns: %v", err)
	}
	if err := e.rt.RemovePodSandbox(ctx, p.ID); err != nil {
		e.t.Errorf("remove sandbox: %v", err)
	}
}

// container creates and starts a busybox container in p.
func (e *env) container(p *pod, cfg runtime.ContainerConfig) string {
	e.t.Helper()
	ctx := context.Background()
	if cfg.Image == "" {
		cfg.Image = images.BusyboxRef
	}
	if cfg.LogPath == "" {
		cfg.LogPath = filepath.Join(p.Dir, "logs", cfg.Name, fmt.Sprintf("%d.log", cfg.Attempt))
	}
	id, err := e.rt.CreateContainer(ctx, p.ID, cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.rt.StartContainer(ctx, id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// waitState polls the container's status until it is in state, or fails
// the test at the deadline.
func (e *env) waitState(id string, state runtime.ContainerState, timeout time.Duration) runtime.ContainerStatus {
	e.t.Helper()
	var st runtime.ContainerStatus
	wait.Eventually(e.t, timeout, fmt.Sprintf("container %s %s", id, state), func() error {
		var err error
		if st, err = e.rt.ContainerStatus(context.Background(), id); err != nil {
			return wait.Stop(err)
		}
		if st.State != state {
			return fmt.Errorf("last status %+v", st)
		}
		return nil
	})
	return st
}

// readLog returns a container's log so far.
func readLog(t testing.TB, path string) string {
	t.Helper()
	var b bytes.Buffer
	if err := runtime.ReadLog(context.Background(), path, runtime.LogOptions{}, &b); err != nil && !errors.Is(err, runtime.ErrNotFound) {
		t.Fatal(err)
	}
	return b.String()
}

func waitLog(t testing.TB, path, want string, timeout time.Duration) {
	t.Helper()
	wait.Eventually(t, timeout, fmt.Sprintf("log %s to say %q", path, want), func() error {
		if got := readLog(t, path); !strings.Contains(got, want) {
			return fmt.Errorf("it says:\n%s", got)
		}
		return nil
	})
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
