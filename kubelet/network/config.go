// Package network gives pods their network: it makes each pod's network
// namespace and runs the CNI plugins on it through libcni. By default it
// writes a conflist for the node (bridge with host-local IPAM on the node's
// pod CIDR, portmap for hostPort, loopback) unless the operator put a config
// in the CNI config directory. With that default config a pod runs only
// the plugins it needs (bridge; portmap only with hostPorts; lo is brought
// up when the namespace is made), since each plugin is a process start on
// the pod's critical path. The host-local reservations and libcni's
// result cache live under the kubelet's own state directory, so several
// kubelets on one machine (each in its own network namespace) never share
// them.
//
// Teardown (CNI DEL) is idempotent and works after the namespace is gone,
// so every teardown path — delete, crash recovery, restart — can run it.
//
// A Gate is the pod network as the kubelet's pod workers and node status
// see it: not ready until the node's pod CIDR is known, then a Manager
// whose config, plugins and masquerade rule are checked every few seconds
// and the verdict cached (NetworkPluginNotReady on the Node while it is
// not nil).
//
// What it touches: the CNI config directory (its own conflist only), the
// kubelet's network state directory (libcni cache, host-local
// reservations), the pinned namespaces under its namespace directory, the
// links and addresses the CNI plugins make, and one nftables table of its
// own (the pod egress masquerade).
package network

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/tugboat/tugboat/internal/netns"
)

// Defaults for Config.
const (
	DefaultConfDir     = "/etc/cni/net.d"
	DefaultNetworkName = "tugboat"
	DefaultBridgeName  = "cni0"
	// DefaultConfFile is the name of the conflist the kubelet writes.
	DefaultConfFile = "10-tugboat.conflist"
)

// DefaultBinDirs are searched for CNI plugins: Debian's package, then the
// upstream location.
var DefaultBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Config configures the pod network manager.
type Config struct {
	// StateDir holds libcni's result cache (StateDir/cache) and the
	// host-local IP reservations (StateDir/ipam). Required; a directory
	// under the kubelet's root dir.
	StateDir string
	// ConfDir is where CNI network configs are read from and the default
	// one is written (DefaultConfDir).
	ConfDir string
	// BinDirs are searched for plugin binaries (DefaultBinDirs).
	BinDirs []string
	// NetNSDir is where pod network namespaces are pinned
	// (netns.DefaultDir).
	NetNSDir string

	// PodCIDR is the node's pod CIDR (e.g. 10.244.1.0/24), needed to write
	// the default config. Empty: only an operator-supplied config is used.
	PodCIDR string
	// NetworkName names the default network (DefaultNetworkName).
	NetworkName string
	// BridgeName is the default network's bridge (DefaultBridgeName).
	BridgeName string
	// MTU of the bridge and veths; 0 lets the plugin choose.
	MTU int
	// NoMasquerade turns off the node's masquerading (SNAT) of pod traffic
	// leaving the pod CIDR (EnsureMasquerade).
	NoMasquerade bool
	// ClusterCIDR, if set, is every node's pods' range: traffic to it is
	// not masqueraded either, so pods see each other's real addresses
	// across nodes.
	ClusterCIDR string
	// RuntimeLoopback: the runtime that runs the plugins (a CRI runtime)
	// brings each pod's loopback up itself, so the default conflist has no
	// loopback plugin.
	RuntimeLoopback bool
}

func (c *Config) setDefaults() {
	if c.ConfDir == "" {
		c.ConfDir = DefaultConfDir
	}
	if len(c.BinDirs) == 0 {
		c.BinDirs = DefaultBinDirs
	}
	if c.NetNSDir == "" {
		c.NetNSDir = netns.DefaultDir
	}
	if c.NetworkName == "" {
		c.NetworkName = DefaultNetworkName
	}
	if c.BridgeName == "" {
		c.BridgeName = DefaultBridgeName
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	if c.StateDir == "" {
		return fmt.Errorf("network config: stateDir: required")
	}
	if !filepath.IsAbs(c.StateDir) {
		return fmt.Errorf("network config: stateDir %q: must be absolute", c.StateDir)
	}
	if c.PodCIDR != "" {
		p, err := netip.ParsePrefix(c.PodCIDR)
		if err != nil {
			return fmt.Errorf("network config: podCIDR %q: %v", c.PodCIDR, err)
		}
		if p.Masked() != p {
			return fmt.Errorf("network config: podCIDR %q: has host bits set (want %s)", c.PodCIDR, p.Masked())
		}
	}
	if c.ClusterCIDR != "" {
		p, err := netip.ParsePrefix(c.ClusterCIDR)
		if err != nil || p.Masked() != p || !p.Addr().Is4() {
			return fmt.Errorf("network config: clusterCIDR %q: want an IPv4 network prefix", c.ClusterCIDR)
		}
	}
	if len(c.BridgeName) > 15 {
		return fmt.Errorf("network config: bridgeName %q: longer than 15 characters", c.BridgeName)
	}
	if c.MTU < 0 {
		return fmt.Errorf("network config: mtu: must not be negative")
	}
	return nil
}

func (c Config) cacheDir() string { return filepath.Join(c.StateDir, "cache") }

// IPAMDataDir is where host-local keeps this node's IP reservations
// (one file per IP under IPAMDataDir/<network name>/).
func (c Config) IPAMDataDir() string { return filepath.Join(c.StateDir, "ipam") }
