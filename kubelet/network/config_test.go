package network

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // "" for valid
	}{
		{"valid", Config{StateDir: "/var/lib/tugboat/cni", PodCIDR: "10.244.1.0/24"}, ""},
		{"no state dir", Config{}, "stateDir: required"},
		{"relative state dir", Config{StateDir: "cni"}, "must be absolute"},
		{"bad cidr", Config{StateDir: "/x", PodCIDR: "10.244.1.0"}, "podCIDR"},
		{"host bits", Config{StateDir: "/x", PodCIDR: "10.244.1.5/24"}, "host bits"},
		{"long bridge", Config{StateDir: "/x", BridgeName: "a-very-long-bridge"}, "bridgeName"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
}

func TestDefaultConfList(t *testing.T) {
	cfg := Config{StateDir: "/var/lib/tugboat/cni", PodCIDR: "10.244.3.0/24", BridgeName: "br-test", MTU: 1400}
	b, err := DefaultConfList(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := libcni.NetworkConfFromBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Network.Type)
	}
	if got := strings.Join(types, ","); got != "bridge,portmap,loopback" {
		t.Fatalf("plugins %s", got)
	}
	// A CRI runtime brings loopback up itself.
	cri := cfg
	cri.RuntimeLoopback = true
	if b, err := DefaultConfList(cri); err != nil || strings.Contains(string(b), "loopback") {
		t.Errorf("conflist for a CRI runtime runs loopback (err %v):\n%s", err, b)
	}
	var bridge struct {
		Bridge    string `json:"bridge"`
		IsGateway bool   `json:"isGateway"`
		IPMasq    bool   `json:"ipMasq"`
		MTU       int    `json:"mtu"`
		IPAM      struct {
			Type    string `json:"type"`
			DataDir string `json:"dataDir"`
			Ranges  [][]struct {
				Subnet string `json:"subnet"`
			} `json:"ranges"`
		} `json:"ipam"`
	}
	if err := json.Unmarshal(list.Plugins[0].Bytes, &bridge); err != nil {
		t.Fatal(err)
	}
	if bridge.Bridge != "br-test" || !bridge.IsGateway || bridge.IPMasq || bridge.MTU != 1400 { // ipMasq: one node rule instead
		t.Errorf("bridge %+v", bridge)
	}
	if bridge.IPAM.Type != "host-local" || bridge.IPAM.Ranges[0][0].Subnet != "10.244.3.0/24" || bridge.IPAM.DataDir != "/var/lib/tugboat/cni/ipam" {
		t.Errorf("ipam %+v: want host-local on the pod CIDR with its data under the state dir", bridge.IPAM)
	}
	if !list.Plugins[1].Network.Capabilities["portMappings"] {
		t.Error("portmap lacks the portMappings capability")
	}
}

func TestEnsureConfig(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "net.d")
	m, err := New(Config{StateDir: filepath.Join(dir, "state"), ConfDir: confDir, PodCIDR: "10.244.1.0/24"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	path, wrote, err := m.EnsureConfig()
	if err != nil || !wrote || filepath.Base(path) != DefaultConfFile {
		t.Fatalf("first EnsureConfig: %s %v %v", path, wrote, err)
	}
	if _, wrote, _ := m.EnsureConfig(); wrote {
		t.Error("rewrote an unchanged config")
	}

	// A new pod CIDR rewrites our own file.
	m2, _ := New(Config{StateDir: filepath.Join(dir, "state"), ConfDir: confDir, PodCIDR: "10.244.2.0/24"}, nil, nil)
	if _, wrote, _ := m2.EnsureConfig(); !wrote {
		t.Error("did not rewrite the default config for a new pod CIDR")
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "10.244.2.0/24") {
		t.Errorf("config not updated:\n%s", b)
	}

	// An operator's config wins and is left alone.
	operator := filepath.Join(confDir, "05-operator.conflist")
	if err := os.WriteFile(operator, []byte(`{"cniVersion":"1.0.0","name":"op","plugins":[{"type":"bridge"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if path, wrote, err := m2.EnsureConfig(); err != nil || wrote || path != operator {
		t.Errorf("with an operator config: %s %v %v", path, wrote, err)
	}
}

func TestStatusSaysWhatIsMissing(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "net.d")
	binDir := filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{StateDir: filepath.Join(dir, "state"), ConfDir: confDir, BinDirs: []string{binDir}, PodCIDR: "10.244.1.0/24"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	err = m.Status(ctx)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "no CNI network config in "+confDir) {
		t.Errorf("no config: %v", err)
	}

	if _, _, err := m.EnsureConfig(); err != nil {
		t.Fatal(err)
	}
	err = m.Status(ctx)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "bridge, portmap, loopback not found") || !strings.Contains(err.Error(), binDir) {
		t.Errorf("no plugins: %v", err)
	}

	bad := filepath.Join(confDir, "01-bad.conflist")
	if err := os.WriteFile(bad, []byte(`{"cniVersion":"1.0.0", "plugins": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	err = m.Status(ctx)
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), bad) {
		t.Errorf("bad config: %v", err)
	}
}

// TestPodChain: with the kubelet's own config a pod runs only the plugins
// it needs; an operator's config runs as written. The derived chain keeps
// the bridge's settings byte for byte, since libcni caches it for DEL.
func TestPodChain(t *testing.T) {
	dir := t.TempDir()
	confDir := filepath.Join(dir, "net.d")
	m, err := New(Config{StateDir: filepath.Join(dir, "state"), ConfDir: confDir, PodCIDR: "10.244.7.0/24"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ours, _, err := m.EnsureConfig()
	if err != nil {
		t.Fatal(err)
	}
	full, err := libcni.NetworkConfFromFile(ours)
	if err != nil {
		t.Fatal(err)
	}
	operator := filepath.Join(confDir, "05-operator.conflist")
	if err := os.WriteFile(operator, []byte(`{"cniVersion":"1.0.0","name":"op","plugins":[{"type":"bridge"},{"type":"portmap","capabilities":{"portMappings":true}},{"type":"loopback"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	opList, err := libcni.NetworkConfFromFile(operator)
	if err != nil {
		t.Fatal(err)
	}
	hostPort := []PortMapping{{HostPort: 8080, ContainerPort: 80}}
	tests := []struct {
		name  string
		list  *libcni.NetworkConfigList
		file  string
		ports []PortMapping
		want  string
	}{
		{"default config, no hostPorts", full, ours, nil, "bridge"},
		{"default config, hostPorts", full, ours, hostPort, "bridge,portmap"},
		{"operator config, no hostPorts", opList, operator, nil, "bridge,portmap,loopback"},
		{"operator config, hostPorts", opList, operator, hostPort, "bridge,portmap,loopback"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.podChain(tc.list, tc.file, PodNetwork{ID: "x", Name: "p", Namespace: "default", PortMappings: tc.ports})
			if err != nil {
				t.Fatal(err)
			}
			var types []string
			for _, p := range got.Plugins {
				types = append(types, p.Network.Type)
			}
			if s := strings.Join(types, ","); s != tc.want {
				t.Fatalf("chain %s, want %s", s, tc.want)
			}
			if got.Name != tc.list.Name || got.CNIVersion != tc.list.CNIVersion {
				t.Errorf("name/version %s/%s, want %s/%s", got.Name, got.CNIVersion, tc.list.Name, tc.list.CNIVersion)
			}
			// What libcni caches for DEL must parse back to the same chain.
			again, err := libcni.NetworkConfFromBytes(got.Bytes)
			if err != nil || len(again.Plugins) != len(got.Plugins) {
				t.Fatalf("cached bytes do not round-trip: %v", err)
			}
			if string(got.Plugins[0].Bytes) != string(tc.list.Plugins[0].Bytes) {
				t.Errorf("bridge config changed:\n%s\nwant\n%s", got.Plugins[0].Bytes, tc.list.Plugins[0].Bytes)
			}
		})
	}
	// The file on disk stays complete.
	if onDisk, _ := libcni.NetworkConfFromFile(ours); len(onDisk.Plugins) != 3 {
		t.Errorf("default config on disk has %d plugins, want 3", len(onDisk.Plugins))
	}
}
