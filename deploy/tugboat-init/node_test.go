package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/sys/unix"
)

func TestExpandArgs(t *testing.T) {
	t.Setenv("TUGBOAT_TEST_X", "x")
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  --a 1\n --b\t2 ", []string{"--a", "1", "--b", "2"}},
		{"--cert-file /pki/node-$NODE_NAME.crt --node-name ${NODE_NAME}", []string{"--cert-file", "/pki/node-w1.crt", "--node-name", "w1"}},
		{"--other $TUGBOAT_TEST_X", []string{"--other", "x"}},
	} {
		if got := expandArgs(tc.in, "w1"); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("expandArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNodeConfigValidate(t *testing.T) {
	good := nodeConfig{NodeName: "w1", ContainerdRoot: "/var/lib/containerd", ContainerdState: "/run/containerd", KubeletArgs: []string{"--x"},
		SandboxImage: "tugboat.local/pause:1.0", CNIBinDir: "/opt/cni/bin", CNIConfDir: "/etc/cni/net.d"}
	if err := good.Validate(); err != nil {
		t.Fatalf("good config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*nodeConfig)
		want string
	}{
		{"no node", func(c *nodeConfig) { c.NodeName = "" }, "--node-name"},
		{"relative root", func(c *nodeConfig) { c.ContainerdRoot = "var/lib" }, "--containerd-root"},
		{"relative state", func(c *nodeConfig) { c.ContainerdState = "run" }, "--containerd-state"},
		{"relative cni conf dir", func(c *nodeConfig) { c.CNIConfDir = "net.d" }, "--cni-conf-dir"},
		{"no sandbox image", func(c *nodeConfig) { c.SandboxImage = "" }, "--sandbox-image"},
		{"no kubelet", func(c *nodeConfig) { c.KubeletArgs = nil }, "--kubelet-args"},
		{"bad sysctl", func(c *nodeConfig) { c.Sysctls = []string{"net.ipv4.ip_forward"} }, "--sysctl"},
	} {
		c := good
		tc.mod(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to name %s", tc.name, err, tc.want)
		}
	}
}

func TestParseNodeFlagsFromEnv(t *testing.T) {
	t.Setenv("NODE_NAME", "worker-9")
	t.Setenv("TUGBOAT_KUBELET_ARGS", "--node-name $NODE_NAME --cert-file /p/node-$NODE_NAME.crt")
	t.Setenv("TUGBOAT_PROXY_ARGS", "")
	c, err := parseNodeFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"--node-name", "worker-9", "--cert-file", "/p/node-worker-9.crt"}; !reflect.DeepEqual(c.KubeletArgs, want) {
		t.Errorf("kubelet args = %q, want %q", c.KubeletArgs, want)
	}
	if c.ProxyArgs != nil {
		t.Errorf("proxy args = %q, want none", c.ProxyArgs)
	}
}

func TestMountFlags(t *testing.T) {
	for _, tc := range []struct {
		st   int64
		want uintptr
	}{
		{0, 0},
		{unix.ST_RDONLY, unix.MS_RDONLY},
		{unix.ST_RDONLY | unix.ST_NOSUID | unix.ST_NODEV | unix.ST_NOEXEC, unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{unix.ST_RELATIME | unix.ST_NOATIME, unix.MS_RELATIME | unix.MS_NOATIME},
	} {
		if got := mountFlags(tc.st); got != tc.want {
			t.Errorf("mountFlags(%#x) = %#x, want %#x", tc.st, got, tc.want)
		}
	}
}

func TestCgroupHierarchiesSkipsSymlinks(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cpu,cpuacct", "memory", "unified"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("cpu,cpuacct", filepath.Join(root, "cpu")); err != nil {
		t.Fatal(err)
	}
	got, err := cgroupHierarchies(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "cpu,cpuacct"), filepath.Join(root, "memory"), filepath.Join(root, "unified")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hierarchies = %q, want %q", got, want)
	}
}

func TestContainerdConfigParses(t *testing.T) {
	c := nodeConfig{
		ContainerdRoot: "/var/lib/containerd", ContainerdState: "/run/containerd", SandboxImage: "tugboat.local/pause:1.0",
		CNIBinDir: "/opt/cni/bin", CNIConfDir: "/etc/cni/net.d",
		RegistryInsecure: []string{"registry:5000"}, RegistryConfigDir: "/etc/containerd/certs.d",
	}
	text, err := containerdConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Version         int
		Root, State     string
		DisabledPlugins []string `toml:"disabled_plugins"`
		GRPC            struct{ Address string }
		Plugins         map[string]map[string]any
	}
	if err := toml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Version != 2 || cfg.Root != "/var/lib/containerd" || cfg.State != "/run/containerd" {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.GRPC.Address != "/run/containerd/containerd.sock" {
		t.Errorf("grpc address = %v", cfg.GRPC.Address)
	}
	for _, p := range cfg.DisabledPlugins {
		if strings.Contains(p, "cri") {
			t.Errorf("disabled plugins %q: want the CRI on", cfg.DisabledPlugins)
		}
	}
	cri := cfg.Plugins["io.containerd.grpc.v1.cri"]
	cni, _ := cri["cni"].(map[string]any)
	reg, _ := cri["registry"].(map[string]any)
	if cri["sandbox_image"] != "tugboat.local/pause:1.0" || cni["bin_dir"] != "/opt/cni/bin" || cni["conf_dir"] != "/etc/cni/net.d" ||
		reg["config_path"] != "/etc/containerd/certs.d" {
		t.Errorf("CRI plugin config = %v", cri)
	}
}

func TestCopyBundledImages(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "images")
	write := func(name, data string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.tar", "aaa")
	write("b.tar", "bbbb")
	write("notes.txt", "not an image")
	old := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(src, "a.tar"), old, old); err != nil {
		t.Fatal(err)
	}

	n, err := copyBundledImages(src, dst)
	if err != nil || n != 2 {
		t.Fatalf("first copy: n=%d err=%v, want 2 files", n, err)
	}
	fi, err := os.Stat(filepath.Join(dst, "a.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(old) {
		t.Errorf("copy mtime = %v, want the source's %v (the kubelet remembers imports by size and mtime)", fi.ModTime(), old)
	}
	if _, err := os.Stat(filepath.Join(dst, "notes.txt")); err == nil {
		t.Error("copied a file that is not a .tar")
	}
	if n, err := copyBundledImages(src, dst); err != nil || n != 0 {
		t.Errorf("second copy: n=%d err=%v, want nothing copied", n, err)
	}
	write("b.tar", "changed")
	if n, err := copyBundledImages(src, dst); err != nil || n != 1 {
		t.Errorf("after a change: n=%d err=%v, want 1", n, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "b.tar")); string(b) != "changed" {
		t.Errorf("b.tar = %q, want the new content", b)
	}
	entries, _ := os.ReadDir(dst)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
	if n, err := copyBundledImages(filepath.Join(src, "missing"), dst); err != nil || n != 0 {
		t.Errorf("missing source: n=%d err=%v, want 0, nil", n, err)
	}
}
