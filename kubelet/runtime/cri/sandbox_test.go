package cri

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestSandboxLifecycle runs a sandbox and reads everything back: the
// config (through the annotation), the IP from the runtime's CNI run, the
// Kubernetes labels crictl shows; then stops and removes it.
func TestSandboxLifecycle(t *testing.T) {
	require(t)
	ctx := context.Background()
	cfg := sandboxConfig(t, "web")
	cfg.Attempt = 2
	cfg.PortMappings = []runtime.PortMapping{{HostPort: 18080, ContainerPort: 80, Protocol: "tcp"}}
	cfg.Annotations = map[string]string{"note": "hello"}
	p := runPod(t, cfg)
	if !netip.MustParsePrefix(testCIDR).Contains(p.IP) {
		t.Errorf("pod IP %s not in %s", p.IP, testCIDR)
	}

	st, err := testRuntime.PodSandboxStatus(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg
	want.CgroupParent = filepath.Join(cgroupParent, "pod"+cfg.Pod.UID)
	if !reflect.DeepEqual(st.Config, want) {
		t.Errorf("config read back:\n got %+v\nwant %+v", st.Config, want)
	}
	if st.State != runtime.SandboxReady || st.CreatedAt.IsZero() {
		t.Errorf("status %+v, want Ready with a creation time", st)
	}
	// The pod's network namespace, from the runtime's verbose status: the
	// pod's address is in it.
	nsPath, err := testRuntime.SandboxNetNS(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	if err := netns.DoPath(nsPath, func() error {
		ifs, err := net.InterfaceAddrs()
		for _, a := range ifs {
			addrs = append(addrs, a.String())
		}
		return err
	}); err != nil {
		t.Fatalf("entering the sandbox's netns %s: %v", nsPath, err)
	}
	if !strings.Contains(strings.Join(addrs, " "), p.IP.String()+"/") {
		t.Errorf("netns %s has addresses %v, not the pod's %s", nsPath, addrs, p.IP)
	}

	for _, f := range []runtime.SandboxFilter{
		{PodUID: cfg.Pod.UID},
		{ID: p.ID},
		{Labels: map[string]string{"app": "web"}, State: runtime.SandboxReady},
	} {
		list, err := testRuntime.ListPodSandbox(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != p.ID || !reflect.DeepEqual(list[0].Config, want) {
			t.Errorf("list %+v: %+v, want just %s", f, list, p.ID)
		}
	}

	// What crictl shows on the node: the pod's Kubernetes names.
	var pods struct {
		Items []struct {
			ID       string            `json:"id"`
			Metadata map[string]any    `json:"metadata"`
			Labels   map[string]string `json:"labels"`
			State    string            `json:"state"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(crictl(t, "pods", "--name", "^web$", "-o", "json")), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 || pods.Items[0].ID != p.ID || pods.Items[0].Metadata["namespace"] != "default" ||
		pods.Items[0].Labels["io.kubernetes.pod.uid"] != cfg.Pod.UID || pods.Items[0].Labels["app"] != "web" {
		t.Errorf("crictl pods: %+v", pods.Items)
	}
	inspect := crictl(t, "inspectp", p.ID)
	for _, s := range []string{`"hostname": "web"`, `"10.96.0.10"`, "18080", p.IP.String()} {
		if !strings.Contains(inspect, s) {
			t.Errorf("crictl inspectp does not show %s:\n%.2000s", s, inspect)
		}
	}

	if err := testRuntime.StopPodSandbox(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if err := testRuntime.StopPodSandbox(ctx, p.ID); err != nil {
		t.Errorf("second stop: %v", err)
	}
	if st, err := testRuntime.PodSandboxStatus(ctx, p.ID); err != nil || st.State != runtime.SandboxNotReady {
		t.Errorf("after stop: %+v, %v; want NotReady", st, err)
	}
	if _, err := testRuntime.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "late", Image: "tugboat.local/busybox:latest", LogPath: filepath.Join(p.Dir, "containers", "late", "0.log")}); !errors.Is(err, runtime.ErrSandboxNotReady) {
		t.Errorf("create in a stopped sandbox: %v, want ErrSandboxNotReady", err)
	}
	if err := testRuntime.RemovePodSandbox(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	if err := testRuntime.RemovePodSandbox(ctx, p.ID); err != nil {
		t.Errorf("second remove: %v", err)
	}
	if _, err := testRuntime.PodSandboxStatus(ctx, p.ID); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("status after remove: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", want.CgroupParent)); err == nil {
		t.Errorf("cgroup parent %s left behind", want.CgroupParent)
	}
	if left := testNetwork.Leftovers(); len(left) > 0 {
		t.Errorf("the runtime's CNI DEL left: %v", left)
	}
}

// TestSandboxRefusals: a CRI runtime makes the netns itself, and bad
// configs are refused before anything is made.
func TestSandboxRefusals(t *testing.T) {
	require(t)
	ctx := context.Background()
	cfg := sandboxConfig(t, "refused")
	cfg.NetNSPath = "/run/netns/x"
	if _, err := testRuntime.RunPodSandbox(ctx, cfg); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("netns path: %v, want ErrInvalid", err)
	}
	cfg = sandboxConfig(t, "refused")
	cfg.Labels["runtime.tugboat.io/x"] = "y"
	if _, err := testRuntime.RunPodSandbox(ctx, cfg); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("reserved label: %v, want ErrInvalid", err)
	}
	cfg = sandboxConfig(t, "refused")
	cfg.PortMappings = []runtime.PortMapping{{HostPort: 70000, ContainerPort: 80}}
	if _, err := testRuntime.RunPodSandbox(ctx, cfg); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("bad port: %v, want ErrInvalid", err)
	}
	if list, _ := testRuntime.ListPodSandbox(ctx, runtime.SandboxFilter{Labels: map[string]string{"app": "refused"}}); len(list) != 0 {
		t.Errorf("refused configs left sandboxes: %+v", list)
	}
}

// TestHostNetworkSandbox: the containers share the node's network
// namespace; no CNI runs, the sandbox has no pod IP of its own.
func TestHostNetworkSandbox(t *testing.T) {
	require(t)
	cfg := sandboxConfig(t, "hostnet")
	cfg.HostNetwork = true
	p := runPod(t, cfg)
	id := p.container(t, "main", "cat /proc/net/dev; sleep 30")
	waitState(t, id, runtime.ContainerRunning)
	out, code := execOut(t, id, "cat", "/proc/net/dev")
	if code != 0 || !strings.Contains(out, testNetwork.Bridge) {
		t.Errorf("host network container does not see the node's bridge %s (exit %d):\n%s", testNetwork.Bridge, code, out)
	}
	st, _ := testRuntime.PodSandboxStatus(context.Background(), p.ID)
	if st.IP != "" || !st.Config.HostNetwork {
		t.Errorf("host network sandbox: %+v", st)
	}
}
