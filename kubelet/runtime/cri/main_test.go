package cri

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/network/networktest"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// The tests run on a private containerd with its CRI plugin on (the
// node's config, package containerdconfig), in this process's network
// namespace, with a CNI config of a test network of its own (bridge and
// host-local on testCIDR) and the busybox and pause images imported. The
// containerd is the first on PATH: Debian's 1.6 in CI, or the compose
// image's 2.x with
//
//	PATH=$HOME/.cache/tugboat/static/containerd-v2.4.2:$PATH go test ./kubelet/runtime/cri
//
// (hack/build-static.sh builds it; CI runs this package on both).

// testCIDR is this package's pod CIDR; other packages' tests use others.
const testCIDR = "10.244.201.0/24"

var (
	testContainerd *containerdtest.Containerd
	testRuntime    *Runtime
	testNetwork    *networktest.Network
	busyboxArchive []byte
	pauseArchive   []byte
	skipReason     error
	// cgroupParent is the run's own, removed at the end.
	cgroupParent = "/tugboat-cri-test-" + randHex(4)
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse() // for testing.Short
	if skipReason = check(); skipReason != nil || testing.Short() {
		return m.Run() // each test skips (or fails in CI) with the reason
	}
	dir, err := os.MkdirTemp("", "tugboat-cri-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// A pod in its own user namespace (host IDs from 65536) must reach
	// its rootfs under the runtime's state dir, as under /run/containerd
	// on a node: MkdirTemp's 0700 would stop it (TestUserNamespaceSandbox).
	if err := os.Chmod(dir, 0o711); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer runtime.RemoveCgroup(cgroupParent)
	ctx := context.Background()
	testNetwork, err = networktest.Start(filepath.Join(dir, "net"), testCIDR)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := testNetwork.Cleanup(); err != nil {
			fmt.Fprintln(os.Stderr, "network cleanup:", err)
		}
	}()
	testContainerd, err = containerdtest.Start(ctx, containerdtest.Options{
		Dir: filepath.Join(dir, "containerd"),
		CRI: &containerdtest.CRIOptions{SandboxImage: images.PauseRef, CNIConfDir: testNetwork.Config().ConfDir},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := testContainerd.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop containerd:", err)
		}
	}()
	testRuntime, err = New(Config{Endpoint: testContainerd.CRIEndpoint, CgroupParent: cgroupParent, KillTimeout: 5 * time.Second}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer testRuntime.Close()
	for _, img := range []struct {
		name string
		out  *[]byte
	}{{"busybox", &busyboxArchive}, {"pause", &pauseArchive}} {
		var buf bytes.Buffer
		if err := images.Build(ctx, img.name, &buf, images.BuildOptions{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		*img.out = buf.Bytes()
		if _, err := testRuntime.ImportImage(ctx, bytes.NewReader(buf.Bytes())); err != nil {
			fmt.Fprintln(os.Stderr, "import", img.name+":", err)
			return 1
		}
	}
	if err := waitNetworkReady(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

func check() error {
	if err := containerdtest.Check(); err != nil {
		return err
	}
	return networktest.Check()
}

// waitNetworkReady waits for the runtime to load the test network's
// config (it watches the folder).
func waitNetworkReady(ctx context.Context) error {
	if err := wait.Until(ctx, 30*time.Second, testRuntime.NetworkStatus); err != nil {
		return fmt.Errorf("the runtime's network is not ready: %w", err)
	}
	return nil
}

// require skips t (fails it in CI) unless the private containerd runs.
func require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a private containerd with CRI, runc and CNI plugins; skipped with -short")
	}
	if skipReason != nil {
		containerdtest.SkipOrFail(t, skipReason)
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// pod is a sandbox made by runPod, removed on cleanup.
type pod struct {
	ID  string
	Ref runtime.PodRef
	Dir string
	IP  netip.Addr
}

// sandboxConfig is a pod's sandbox config as the kubelet makes it: the
// /etc files and logs under its own dir.
func sandboxConfig(t testing.TB, name string) runtime.SandboxConfig {
	uid := randHex(8)
	dir := filepath.Join(t.TempDir(), uid)
	etc := filepath.Join(dir, "etc")
	if _, err := runtime.WriteEtcFiles(etc, runtime.PodEtc{Hostname: name, IPs: []string{"127.0.0.1"}, DNS: runtime.DNSConfig{Servers: []string{"10.96.0.10"}}}); err != nil {
		t.Fatal(err)
	}
	return runtime.SandboxConfig{
		Pod:          runtime.PodRef{Namespace: "default", Name: name, UID: uid},
		Hostname:     name,
		EtcFiles:     runtime.EtcFilesIn(etc),
		LogDirectory: filepath.Join(dir, "containers"),
		DNS:          &runtime.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"default.svc.cluster.local"}, Options: []string{"ndots:5"}},
		Labels:       map[string]string{"tugboat.io/node": "test", "app": name},
	}
}

// runPod runs a sandbox for cfg and registers its removal.
func runPod(t testing.TB, cfg runtime.SandboxConfig) *pod {
	t.Helper()
	ctx := context.Background()
	id, err := testRuntime.RunPodSandbox(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testRuntime.StopPodSandbox(ctx, id); err != nil {
			t.Errorf("stop sandbox: %v", err)
		}
		if err := testRuntime.RemovePodSandbox(ctx, id); err != nil {
			t.Errorf("remove sandbox: %v", err)
		}
	})
	st, err := testRuntime.PodSandboxStatus(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	p := &pod{ID: id, Ref: cfg.Pod, Dir: filepath.Dir(cfg.LogDirectory)}
	if !cfg.HostNetwork {
		if p.IP, err = netip.ParseAddr(st.IP); err != nil {
			t.Fatalf("sandbox IP %q: %v", st.IP, err)
		}
	}
	return p
}

// runtimeConfig is a busybox container running script in p.
func runtimeConfig(p *pod, name, script string) runtime.ContainerConfig {
	return runtime.ContainerConfig{
		Name:    name,
		Image:   images.BusyboxRef,
		Command: []string{"sh", "-c", script},
		LogPath: filepath.Join(p.Dir, "containers", name, "0.log"),
		Labels:  map[string]string{"tugboat.io/node": "test"},
	}
}

// container creates and starts a busybox container running script in p.
func (p *pod) container(t testing.TB, name, script string, mod ...func(*runtime.ContainerConfig)) string {
	t.Helper()
	cfg := runtimeConfig(p, name, script)
	for _, f := range mod {
		f(&cfg)
	}
	id, err := testRuntime.CreateContainer(context.Background(), p.ID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := testRuntime.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// waitState waits for the container to reach state and returns its status.
func waitState(t testing.TB, id string, state runtime.ContainerState) runtime.ContainerStatus {
	t.Helper()
	var st runtime.ContainerStatus
	wait.Eventually(t, 20*time.Second, fmt.Sprintf("container %s %s", id, state), func() (err error) {
		if st, err = testRuntime.ContainerStatus(context.Background(), id); err == nil && st.State != state {
			err = fmt.Errorf("status %+v", st)
		}
		return err
	})
	return st
}

// crictl runs crictl against the test containerd, if it is installed
// (hack/install-deps.sh installs it; in CI its absence fails the test).
func crictl(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("crictl")
	if err != nil {
		containerdtest.SkipOrFail(t, fmt.Errorf("crictl not found on PATH; install it with hack/install-deps.sh"))
	}
	cmd := exec.Command(bin, append([]string{"--runtime-endpoint", testContainerd.CRIEndpoint, "--image-endpoint", testContainerd.CRIEndpoint}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("crictl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}
