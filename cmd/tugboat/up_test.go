package main

import (
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/proxy"
	"github.com/tugboat/tugboat/proxy/ingress"
)

func validConfig() Config {
	return Config{DataDir: "/var/lib/tugboat", Listen: "127.0.0.1:6443", NodeName: "n1", CNIBinDirs: []string{"/usr/lib/cni"},
		Runtime: "cri", ClusterCIDR: "10.244.0.0/16", ServiceCIDR: "10.96.0.0/16"}
}

func TestConfigValidate(t *testing.T) {
	if c := validConfig(); c.Validate() != nil {
		t.Fatalf("valid config: %v", c.Validate())
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.DataDir = "state" }, "--data-dir"},
		{func(c *Config) { c.NodeName = "" }, "--node-name"},
		{func(c *Config) { c.CNIBinDirs = nil }, "--cni-bin-dir"},
		{func(c *Config) { c.Listen = "6443" }, "--listen"},
		{func(c *Config) { c.Runtime = "docker" }, "--runtime"},
		{func(c *Config) { c.NodeIP = "10.0.0" }, "--node-ip"},
		{func(c *Config) { c.ClusterCIDR = "10.244.0.0" }, "--cluster-cidr"},
		{func(c *Config) { c.ServiceCIDR = "" }, "--service-cidr"},
	} {
		c := validConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want it to name %s", err, tc.want)
		}
	}
}

func TestDialAddr(t *testing.T) {
	for listen, want := range map[string]string{
		"127.0.0.1:6443":  "127.0.0.1:6443",
		"0.0.0.0:6443":    "127.0.0.1:6443",
		":6443":           "127.0.0.1:6443",
		"[::]:6443":       "127.0.0.1:6443",
		"10.0.0.5:7443":   "10.0.0.5:7443",
		"node.local:6443": "node.local:6443",
	} {
		if got := (Config{Listen: listen}).dialAddr(); got != want {
			t.Errorf("dialAddr(%q) = %q, want %q", listen, got, want)
		}
	}
}

// TestEnsurePKIAndAdminConfig: the first start makes the certificates,
// the node's included, and an encryption key; the admin config names them.
func TestEnsurePKIAndAdminConfig(t *testing.T) {
	c := validConfig()
	c.DataDir = t.TempDir()
	c.Listen = "10.1.2.3:6443"
	c.NoUserConfig = true
	c.setDefaults()
	log := slog.New(slog.DiscardHandler)
	if err := ensurePKI(c, log); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ca.crt", "apiserver.crt", "admin.key", "scheduler.crt", "controller-manager.crt", "proxy.crt", "node-n1.crt", encryptionKeyFile} {
		if _, err := os.Stat(filepath.Join(c.pkiDir(), f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if _, err := apiserverConfig(c); err != nil {
		t.Errorf("apiserver config from the PKI: %v", err)
	}
	if err := writeAdminConfigs(c, log); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server: 10.1.2.3:6443", "certFile: " + filepath.Join(c.pkiDir(), "admin.crt")} {
		if !strings.Contains(string(b), want) {
			t.Errorf("admin config lacks %q:\n%s", want, b)
		}
	}
	c.NodeName = "renamed"
	if err := ensurePKI(c, log); err == nil || !strings.Contains(err.Error(), "--node-name") {
		t.Errorf("renamed node: err = %v, want a hint at --node-name", err)
	}
}

func TestImportImages(t *testing.T) {
	c := validConfig()
	c.DataDir, c.ImportImages = t.TempDir(), t.TempDir()
	log := slog.New(slog.DiscardHandler)
	if err := importImages(c, log); err == nil {
		t.Error("empty folder: want an error saying there is nothing to import")
	}
	if err := os.WriteFile(filepath.Join(c.ImportImages, "echo.tar"), []byte("archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := importImages(c, log); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(c.DataDir, "kubelet", "images", "echo.tar")); err != nil || string(b) != "archive" {
		t.Errorf("copied archive = %q, %v", b, err)
	}
}

// The all-in-one binary runs the proxy's Ingress listeners, with the
// proxy's flags and defaults; a bad address is refused naming its flag.
func TestIngressFlags(t *testing.T) {
	var proxyFlags proxy.Flags
	pfs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	proxyFlags.Register(pfs)
	for _, args := range [][]string{nil, {"--ingress-listen", "127.0.0.1:8080", "--ingress-tls-listen", ""}} {
		c := validConfig()
		fs := flag.NewFlagSet("tugboat up", flag.ContinueOnError)
		registerFlags(fs, &c)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ingress-listen", "ingress-tls-listen"} {
			if fs.Lookup(name).DefValue != pfs.Lookup(name).DefValue || fs.Lookup(name).Usage != pfs.Lookup(name).Usage {
				t.Errorf("--%s: default %q, want the proxy's %q", name, fs.Lookup(name).DefValue, pfs.Lookup(name).DefValue)
			}
		}
		c.Logger = slog.New(slog.DiscardHandler)
		pc := proxyConfig(c, nil)
		want := [2]string{ingress.DefaultListen, ingress.DefaultTLSListen}
		if args != nil {
			want = [2]string{"127.0.0.1:8080", ""}
		}
		if got := [2]string{pc.IngressListen, pc.IngressTLSListen}; got != want {
			t.Errorf("%q: the proxy's Ingress listeners %q, want %q", args, got, want)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	c := validConfig()
	c.IngressTLSListen = "443"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "--ingress-tls-listen") {
		t.Errorf("err = %v, want it to name --ingress-tls-listen", err)
	}
}
