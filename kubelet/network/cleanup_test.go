package network_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/network/networktest"
)

// TestCleanup: after a hostPort pod ran and was torn down, Cleanup leaves
// no masquerade table, bridge, conflist or the folders made for it; an
// operator's config in the folder is left alone with the folder.
func TestCleanup(t *testing.T) {
	n := networktest.New(t, testCIDR)
	cfg := n.Config()
	cfg.ConfDir = filepath.Join(n.Dir, "etc", "cni", "net.d") // folders it has to make
	m, err := network.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.EnsureConfig(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pod := newPod(t, n)
	pod.PortMappings = []network.PortMapping{{HostPort: 38081, ContainerPort: 80}}
	if _, err := m.SetUpPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := m.TearDownPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("nft", "list", "table", "ip", cfg.MasqueradeTable()).CombinedOutput(); err == nil {
		t.Errorf("masquerade table %s left:\n%s", cfg.MasqueradeTable(), out)
	}
	if _, err := netlink.LinkByName(cfg.BridgeName); err == nil {
		t.Errorf("bridge %s left", cfg.BridgeName)
	}
	if _, err := os.Stat(filepath.Join(n.Dir, "etc")); !os.IsNotExist(err) {
		t.Errorf("the folders made for the CNI config are left (%v)", err)
	}

	// An operator's config: the kubelet's cleanup keeps it and its folder.
	if err := os.MkdirAll(cfg.ConfDir, 0o755); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(cfg.ConfDir, "05-operator.conflist")
	if err := os.WriteFile(theirs, []byte(`{"cniVersion": "1.0.0", "name": "op", "plugins": [{"type": "bridge"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(theirs); err != nil {
		t.Errorf("the operator's config is gone: %v", err)
	}
}
