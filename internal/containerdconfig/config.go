// Package containerdconfig renders the containerd config a Tugboat node
// runs: containerd's CRI plugin on, set up for the kubelet's CRI backend
// (kubelet/runtime/cri). One renderer serves every place that starts a
// containerd for a kubelet — the compose node image (deploy/tugboat-init),
// the test cluster and the runtime tests (containerdtest), and the install
// script (through `tugboat-init containerd-config`) — so they cannot drift.
//
// The file is a version 2 config. containerd 1.6 (Debian 12's) reads it
// as it is; containerd 2.x migrates it on load (sandbox_image becomes
// pinned_images.sandbox, cni.bin_dir becomes bin_dirs, the grpc address
// moves to the server plugin), so the same text works on both.
//
// What it sets, and why:
//
//   - the CRI plugin's sandbox image: Tugboat's own pause (e2e/images
//     PauseRef), imported on the node like every other image, never pulled;
//   - the CNI folders: the kubelet writes its conflist for the node's pod
//     CIDR into ConfDir, and the runtime runs the plugins of BinDir for
//     each sandbox;
//   - runc through the io.containerd.runc.v2 shim with the cgroup driver
//     matching the kubelet's (cgroupfs unless SystemdCgroup);
//   - the snapshotter (overlayfs by default);
//   - a hosts directory for registry mirrors and plain-HTTP lab
//     registries (config_path: <dir>/<host>/hosts.toml);
//   - the streaming server (exec, attach, port-forward) on 127.0.0.1 on a
//     free port: only the kubelet on the same node connects to it, and
//     relays it over its tunnel to the apiserver;
//   - restrict_oom_score_adj: the pause container asks for -998, which a
//     containerd without CAP_SYS_RESOURCE (a node in a container) may not
//     set; restricted, it gets containerd's own score;
//   - optionally the pods' network namespaces under the state folder, for a
//     private containerd that must not touch /var/run/netns.
package containerdconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Options describe one containerd.
type Options struct {
	// Root and State are containerd's root and state folders. Required.
	Root, State string
	// Address is the gRPC socket, shared by containerd's own API and the
	// CRI; default <State>/containerd.sock.
	Address string
	// SandboxImage is the pause image. Required.
	SandboxImage string
	// CNIBinDir holds the CNI plugins (containerd 1.6 takes one folder);
	// CNIConfDir is where the kubelet writes its conflist. Required.
	CNIBinDir, CNIConfDir string
	// SystemdCgroup selects runc's systemd cgroup driver (the kubelet's
	// --cgroup-driver systemd); false is cgroupfs.
	SystemdCgroup bool
	// Snapshotter is the image snapshotter (default "overlayfs").
	Snapshotter string
	// RuncBinary is the runc binary the shim runs; empty is "runc" on
	// containerd's PATH.
	RuncBinary string
	// RegistryConfigDir is the registry hosts folder
	// (<dir>/<host>/hosts.toml); empty: none.
	RegistryConfigDir string
	// NetNSUnderState mounts the pods' network namespaces under
	// <State>/io.containerd.grpc.v1.cri/netns instead of /var/run/netns.
	NetNSUnderState bool
	// OptDir is the folder of containerd's "opt" plugin; empty is
	// <Root>/opt (never the system's /opt/containerd).
	OptDir string
	// LogLevel is containerd's log level (default "info").
	LogLevel string
}

// DefaultSnapshotter is the snapshotter of images and containers.
const DefaultSnapshotter = "overlayfs"

// DefaultSandboxImage is Tugboat's pause image (deploy/pause, built by
// hack/mkimage pause and imported on every node).
const DefaultSandboxImage = "tugboat.local/pause:1.0"

// Validate names the first missing or relative path.
func (o Options) Validate() error {
	for _, f := range []struct{ name, v string }{
		{"root", o.Root}, {"state", o.State}, {"cni bin dir", o.CNIBinDir}, {"cni conf dir", o.CNIConfDir},
	} {
		if f.v == "" {
			return fmt.Errorf("containerd config: %s: required", f.name)
		}
		if !filepath.IsAbs(f.v) {
			return fmt.Errorf("containerd config: %s %q: must be absolute", f.name, f.v)
		}
	}
	if o.SandboxImage == "" {
		return errors.New("containerd config: sandbox image: required")
	}
	return nil
}

// SocketPath is the gRPC socket of a containerd with these options.
func (o Options) SocketPath() string {
	if o.Address != "" {
		return o.Address
	}
	return filepath.Join(o.State, "containerd.sock")
}

// Render returns the config file's text.
func Render(o Options) (string, error) {
	if err := o.Validate(); err != nil {
		return "", err
	}
	if o.Snapshotter == "" {
		o.Snapshotter = DefaultSnapshotter
	}
	if o.OptDir == "" {
		o.OptDir = filepath.Join(o.Root, "opt")
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	addr := o.SocketPath()
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# containerd for a Tugboat kubelet (CRI). Written by Tugboat; edits are lost.")
	w("version = 2")
	w("root = %q", o.Root)
	w("state = %q", o.State)
	// Snapshotters and tracing a node never uses: less to load at start.
	w("disabled_plugins = [")
	for _, p := range []string{
		"io.containerd.snapshotter.v1.aufs",
		"io.containerd.snapshotter.v1.btrfs",
		"io.containerd.snapshotter.v1.devmapper",
		"io.containerd.snapshotter.v1.zfs",
		"io.containerd.tracing.processor.v1.otlp",
		"io.containerd.internal.v1.tracing",
	} {
		if p != "io.containerd.snapshotter.v1."+o.Snapshotter {
			w("  %q,", p)
		}
	}
	w("]")
	w("")
	w("[grpc]")
	w("  address = %q", addr)
	w("")
	w("[ttrpc]")
	w("  address = %q", addr+".ttrpc")
	w("")
	w("[debug]")
	w("  level = %q", o.LogLevel)
	w("")
	w(`[plugins."io.containerd.internal.v1.opt"]`)
	w("  path = %q", o.OptDir)
	w("")
	const cri = `plugins."io.containerd.grpc.v1.cri"`
	w("[%s]", cri)
	w("  sandbox_image = %q", o.SandboxImage)
	w(`  stream_server_address = "127.0.0.1"`)
	w(`  stream_server_port = "0"`)
	w("  restrict_oom_score_adj = true")
	w("  netns_mounts_under_state_dir = %t", o.NetNSUnderState)
	w("  [%s.containerd]", cri)
	w("    snapshotter = %q", o.Snapshotter)
	w(`    default_runtime_name = "runc"`)
	w("    [%s.containerd.runtimes.runc]", cri)
	w(`      runtime_type = "io.containerd.runc.v2"`)
	w("      [%s.containerd.runtimes.runc.options]", cri)
	w("        SystemdCgroup = %t", o.SystemdCgroup)
	if o.RuncBinary != "" {
		w("        BinaryName = %q", o.RuncBinary)
	}
	w("  [%s.cni]", cri)
	w("    bin_dir = %q", o.CNIBinDir)
	w("    conf_dir = %q", o.CNIConfDir)
	w("    max_conf_num = 1")
	if o.RegistryConfigDir != "" {
		w("  [%s.registry]", cri)
		w("    config_path = %q", o.RegistryConfigDir)
	}
	return b.String(), nil
}

// WritePlainHTTPHosts writes, in the registry hosts folder dir
// (Options.RegistryConfigDir), a hosts.toml for each registry host:port
// that makes containerd pull from it over plain HTTP (a lab registry).
func WritePlainHTTPHosts(dir string, hosts []string) error {
	for _, h := range hosts {
		if h == "" || strings.ContainsAny(h, "/ \"") {
			return fmt.Errorf("registry host %q: want host[:port]", h)
		}
		d := filepath.Join(dir, h)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		text := fmt.Sprintf("# Written by Tugboat: %s over plain HTTP.\nserver = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", h, h, h)
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}
