package containerdconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	o := Options{
		Root: "/var/lib/containerd", State: "/run/containerd", SandboxImage: DefaultSandboxImage,
		CNIBinDir: "/opt/cni/bin", CNIConfDir: "/etc/cni/net.d", RegistryConfigDir: "/etc/containerd/certs.d",
		RuncBinary: "/usr/local/bin/runc",
	}
	out, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version = 2\n",
		`address = "/run/containerd/containerd.sock"`,
		`address = "/run/containerd/containerd.sock.ttrpc"`,
		`sandbox_image = "tugboat.local/pause:1.0"`,
		`bin_dir = "/opt/cni/bin"`,
		`conf_dir = "/etc/cni/net.d"`,
		`snapshotter = "overlayfs"`,
		"SystemdCgroup = false",
		`BinaryName = "/usr/local/bin/runc"`,
		`config_path = "/etc/containerd/certs.d"`,
		"restrict_oom_score_adj = true",
		"netns_mounts_under_state_dir = false",
		`stream_server_address = "127.0.0.1"`,
		`path = "/var/lib/containerd/opt"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `"io.containerd.snapshotter.v1.overlayfs"`) {
		t.Error("the snapshotter in use is disabled")
	}
	o.SystemdCgroup, o.NetNSUnderState, o.Snapshotter = true, true, "native"
	out, _ = Render(o)
	if !strings.Contains(out, "SystemdCgroup = true") || !strings.Contains(out, "netns_mounts_under_state_dir = true") || !strings.Contains(out, `snapshotter = "native"`) {
		t.Errorf("options not rendered:\n%s", out)
	}
}

func TestRenderRefuses(t *testing.T) {
	ok := Options{Root: "/r", State: "/s", SandboxImage: "p", CNIBinDir: "/b", CNIConfDir: "/c"}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"no root", func(o *Options) { o.Root = "" }, "root: required"},
		{"relative state", func(o *Options) { o.State = "run" }, `state "run": must be absolute`},
		{"no sandbox image", func(o *Options) { o.SandboxImage = "" }, "sandbox image: required"},
		{"no cni conf dir", func(o *Options) { o.CNIConfDir = "" }, "cni conf dir: required"},
	} {
		o := ok
		tc.mod(&o)
		if _, err := Render(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestWritePlainHTTPHosts(t *testing.T) {
	dir := t.TempDir()
	if err := WritePlainHTTPHosts(dir, []string{"registry:5000"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "registry:5000", "hosts.toml"))
	if err != nil || !strings.Contains(string(b), `server = "http://registry:5000"`) {
		t.Fatalf("hosts.toml %q, %v", b, err)
	}
	if err := WritePlainHTTPHosts(dir, []string{"http://x/y"}); err == nil {
		t.Error("a URL was taken for a host")
	}
}
