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
	if bridge.Bridge != "br-test" || !bridge.IsGateway || !bridge.IPMasq || bridge.MTU != 1400 {
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
