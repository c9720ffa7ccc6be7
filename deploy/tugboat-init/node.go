package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tugboat/tugboat/internal/containerdconfig"
)

// nodeConfig is what `tugboat-init node` needs; every field has a flag.
type nodeConfig struct {
	// NodeName is substituted for $NODE_NAME in the argument lists
	// (default: the hostname, which compose sets per node).
	NodeName string
	// ContainerdConfig is where the generated containerd config goes.
	ContainerdConfig string
	// ContainerdRoot must be on a volume: overlayfs snapshots cannot live
	// on the container's own overlay filesystem.
	ContainerdRoot     string
	ContainerdState    string
	ContainerdLogLevel string
	// SandboxImage is the CRI plugin's pause image; CNIBinDir and
	// CNIConfDir the CNI folders it uses (the kubelet's --cni-bin-dir and
	// --cni-conf-dir).
	SandboxImage          string
	CNIBinDir, CNIConfDir string
	// RegistryInsecure are registries (host:port) containerd pulls from
	// over plain HTTP, through a hosts.toml each in RegistryConfigDir.
	RegistryInsecure  []string
	RegistryConfigDir string
	// BundledImages holds image archives shipped in the node image; they
	// are copied into ImportDir, the kubelet's watched import folder.
	BundledImages string
	ImportDir     string
	// KubeletArgs and ProxyArgs are the two components' command lines
	// after the binary name; $NODE_NAME is substituted. Empty ProxyArgs:
	// no proxy.
	KubeletArgs []string
	ProxyArgs   []string
	// Sysctls are set before anything starts ("net.ipv4.ip_forward=1").
	Sysctls []string
}

// Validate names the first bad field.
func (c nodeConfig) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("--node-name: required (or a hostname)")
	case !filepath.IsAbs(c.ContainerdRoot):
		return fmt.Errorf("--containerd-root %q: must be an absolute path", c.ContainerdRoot)
	case !filepath.IsAbs(c.ContainerdState):
		return fmt.Errorf("--containerd-state %q: must be an absolute path", c.ContainerdState)
	case !filepath.IsAbs(c.CNIBinDir):
		return fmt.Errorf("--cni-bin-dir %q: must be an absolute path", c.CNIBinDir)
	case !filepath.IsAbs(c.CNIConfDir):
		return fmt.Errorf("--cni-conf-dir %q: must be an absolute path", c.CNIConfDir)
	case c.SandboxImage == "":
		return errors.New("--sandbox-image: required")
	case len(c.KubeletArgs) == 0:
		return errors.New("--kubelet-args (env TUGBOAT_KUBELET_ARGS): required")
	}
	for _, s := range c.Sysctls {
		if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
			return fmt.Errorf("--sysctl %q: want key=value", s)
		}
	}
	return nil
}

func parseNodeFlags(args []string) (nodeConfig, error) {
	var c nodeConfig
	host, _ := os.Hostname()
	var kubelet, proxy, sysctls, registries string
	fl := flag.NewFlagSet("tugboat-init node", flag.ContinueOnError)
	fl.StringVar(&c.NodeName, "node-name", envOr("NODE_NAME", host), "node name substituted for $NODE_NAME (env NODE_NAME; default the hostname)")
	fl.StringVar(&c.ContainerdConfig, "containerd-config", "/etc/containerd/config.toml", "where to write containerd's config")
	fl.StringVar(&c.ContainerdRoot, "containerd-root", "/var/lib/containerd", "containerd's root (must be a volume)")
	fl.StringVar(&c.ContainerdState, "containerd-state", "/run/containerd", "containerd's state folder; its socket is containerd.sock in it")
	fl.StringVar(&c.ContainerdLogLevel, "containerd-log-level", "warn", "containerd's --log-level")
	fl.StringVar(&c.SandboxImage, "sandbox-image", containerdconfig.DefaultSandboxImage, "the CRI plugin's sandbox (pause) image, bundled in the node image")
	fl.StringVar(&c.CNIBinDir, "cni-bin-dir", "/opt/cni/bin", "the CNI plugins containerd runs for each sandbox")
	fl.StringVar(&c.CNIConfDir, "cni-conf-dir", "/etc/cni/net.d", "where the kubelet writes its conflist and containerd reads it")
	fl.StringVar(&registries, "registry-insecure", os.Getenv("TUGBOAT_REGISTRY_INSECURE"), "registries (host:port, comma-separated) containerd pulls from over plain HTTP (env TUGBOAT_REGISTRY_INSECURE)")
	fl.StringVar(&c.RegistryConfigDir, "registry-config-dir", "/etc/containerd/certs.d", "containerd's registry hosts folder")
	fl.StringVar(&c.BundledImages, "bundled-images", "/usr/share/tugboat/images", "image archives shipped in the node image")
	fl.StringVar(&c.ImportDir, "import-dir", "/var/lib/tugboat/kubelet/images", "the kubelet's image import folder")
	fl.StringVar(&kubelet, "kubelet-args", os.Getenv("TUGBOAT_KUBELET_ARGS"), "the kubelet's arguments (env TUGBOAT_KUBELET_ARGS)")
	fl.StringVar(&proxy, "proxy-args", os.Getenv("TUGBOAT_PROXY_ARGS"), "the proxy's arguments (env TUGBOAT_PROXY_ARGS); empty runs no proxy")
	fl.StringVar(&sysctls, "sysctl", "net.ipv4.ip_forward=1,net.bridge.bridge-nf-call-iptables=1", "comma-separated key=value set at start (best effort)")
	if err := fl.Parse(args); err != nil {
		return c, err
	}
	c.Sysctls = splitList(sysctls)
	c.RegistryInsecure = splitList(registries)
	c.KubeletArgs = expandArgs(kubelet, c.NodeName)
	c.ProxyArgs = expandArgs(proxy, c.NodeName)
	return c, c.Validate()
}

// expandArgs splits a command line on white space and substitutes
// $NODE_NAME (and other environment variables).
func expandArgs(s, node string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		out = append(out, os.Expand(f, func(k string) string {
			if k == "NODE_NAME" {
				return node
			}
			return os.Getenv(k)
		}))
	}
	return out
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// runNode prepares the container and supervises containerd, then the
// kubelet and the proxy, until ctx ends.
func runNode(ctx context.Context, args []string) error {
	cfg, err := parseNodeFlags(args)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "tugboat-init", "node", cfg.NodeName)
	if err := prepareMounts(log); err != nil {
		return err
	}
	setSysctls(log, cfg.Sysctls)
	if err := writeContainerdConfig(cfg); err != nil {
		return err
	}
	n, err := copyBundledImages(cfg.BundledImages, cfg.ImportDir)
	if err != nil {
		return err
	}
	log.Info("node prepared", "bundledImages", n, "importDir", cfg.ImportDir)

	sock := filepath.Join(cfg.ContainerdState, "containerd.sock")
	procs := []process{{
		Name:  "containerd",
		Path:  "containerd",
		Args:  []string{"--config", cfg.ContainerdConfig, "--log-level", cfg.ContainerdLogLevel},
		Ready: func(ctx context.Context) error { return waitSocket(ctx, sock) },
	}, {
		Name: "kubelet",
		Path: "kubelet",
		Args: cfg.KubeletArgs,
	}}
	if len(cfg.ProxyArgs) > 0 {
		procs = append(procs, process{Name: "proxy", Path: "proxy", Args: cfg.ProxyArgs})
	}
	return (&supervisor{log: log}).Run(ctx, procs)
}

// waitSocket waits until a unix socket accepts connections.
func waitSocket(ctx context.Context, path string) error {
	for {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", path, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
