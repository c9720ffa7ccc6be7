// Package networktest gives tests a pod network of their own: a
// network.Manager with a unique network name and bridge, its config and
// state in a temp dir, and a cleanup that removes the bridge and any
// iptables rules the CNI plugins left for that network. It is used by the
// kubelet's runtime tests and by the e2e harness.
package networktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/userdata"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"

	"github.com/tugboat/tugboat/kubelet/network"
)

// Plugins are the CNI plugin binaries the default config needs.
var Plugins = []string{"bridge", "host-local", "portmap", "loopback"}

// Check says why a test pod network cannot be made here (not root, CNI
// plugins or iptables missing), or nil.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("networktest: needs root")
	}
	for _, p := range Plugins {
		found := false
		for _, d := range network.DefaultBinDirs {
			if _, err := os.Stat(filepath.Join(d, p)); err == nil {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("networktest: CNI plugin %s not found in %v; install containernetworking-plugins with hack/install-deps.sh", p, network.DefaultBinDirs)
		}
	}
	for _, b := range []string{"iptables", "iptables-save", "iptables-restore"} {
		if _, err := exec.LookPath(b); err != nil {
			return fmt.Errorf("networktest: %s not found; install iptables with hack/install-deps.sh", b)
		}
	}
	return nil
}

// Network is a test pod network.
type Network struct {
	*network.Manager
	Name    string // CNI network name, "tbt-<hex>"
	Bridge  string // bridge name, "tbt<hex>"
	PodCIDR string
	Dir     string
	// Registry holds the manager's metrics.
	Registry *prometheus.Registry

	hadHostportChains bool
}

// New makes a test network on podCIDR (pick one no other test uses, e.g.
// 10.244.200.0/24), with its default config written, and removes it on
// cleanup. It skips tb (fails it under CI=true) if Check fails, and skips
// it with -short.
func New(tb testing.TB, podCIDR string) *Network {
	tb.Helper()
	if testing.Short() {
		tb.Skip("needs root and CNI plugins; skipped with -short")
	}
	if err := Check(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%v (CI=true: not skipping)", err)
		}
		tb.Skip(err)
	}
	n, err := Start(tb.TempDir(), podCIDR)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := n.Cleanup(); err != nil {
			tb.Errorf("network cleanup: %v", err)
		}
	})
	return n
}

// Start is New for TestMain and harnesses: the caller calls Cleanup.
func Start(dir, podCIDR string) (*Network, error) {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	suffix := hex.EncodeToString(b)
	n := &Network{
		Name:     "tbt-" + suffix,
		Bridge:   "tbt" + suffix,
		PodCIDR:  podCIDR,
		Dir:      dir,
		Registry: prometheus.NewRegistry(),
	}
	n.hadHostportChains = chainExists("nat", "CNI-HOSTPORT-DNAT")
	removeStaleBridges(podCIDR)
	removeStaleMasqueradeTables(podCIDR)
	m, err := network.New(network.Config{
		StateDir:    filepath.Join(dir, "state"),
		ConfDir:     filepath.Join(dir, "net.d"),
		PodCIDR:     podCIDR,
		NetworkName: n.Name,
		BridgeName:  n.Bridge,
	}, nil, n.Registry)
	if err != nil {
		return nil, err
	}
	if _, _, err := m.EnsureConfig(); err != nil {
		return nil, err
	}
	if err := m.EnsureMasquerade(); err != nil {
		return nil, err
	}
	n.Manager = m
	return n, nil
}

// Leftovers lists what pod networks of this test network left behind:
// host-local reservations, libcni cache entries, veths on the bridge,
// iptables rules naming the network. Empty after every pod is torn down.
func (n *Network) Leftovers() []string {
	var out []string
	ipam := filepath.Join(n.Config().IPAMDataDir(), n.Name)
	if entries, err := os.ReadDir(ipam); err == nil {
		for _, e := range entries {
			if e.Name() != "lock" && !strings.HasPrefix(e.Name(), "last_reserved_ip") {
				out = append(out, "host-local reservation "+e.Name())
			}
		}
	}
	if entries, err := os.ReadDir(filepath.Join(n.Config().StateDir, "cache", "results")); err == nil {
		for _, e := range entries {
			out = append(out, "CNI cache "+e.Name())
		}
	}
	if br, err := netlink.LinkByName(n.Bridge); err == nil {
		links, _ := netlink.LinkList()
		for _, l := range links {
			if l.Attrs().MasterIndex == br.Attrs().Index {
				out = append(out, "veth "+l.Attrs().Name)
			}
		}
	}
	for _, r := range n.iptablesRules() {
		out = append(out, "iptables "+r)
	}
	return out
}

// Cleanup deletes the bridge, the node masquerade table, the iptables
// rules and per-pod chains that name this network, and portmap's top-level chains if this network made
// them and nothing uses them.
func (n *Network) Cleanup() error {
	var errs []error
	if br, err := netlink.LinkByName(n.Bridge); err == nil {
		if err := netlink.LinkDel(br); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %w", n.Bridge, err))
		}
	}
	if err := n.deleteRules(); err != nil {
		errs = append(errs, err)
	}
	if n.Manager != nil {
		if err := n.RemoveMasquerade(); err != nil {
			errs = append(errs, err)
		}
	}
	if !n.hadHostportChains {
		if err := network.DeleteUnusedHostportChains(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// iptablesRules returns the nat rules (in iptables-save form) that name
// this network in their comment.
func (n *Network) iptablesRules() []string {
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		return nil
	}
	var rules []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "-A ") && strings.Contains(line, `\"`+n.Name+`\"`) {
			rules = append(rules, line)
		}
	}
	return rules
}

func (n *Network) deleteRules() error {
	rules := n.iptablesRules()
	if len(rules) == 0 {
		return nil
	}
	var script bytes.Buffer
	script.WriteString("*nat\n")
	chains := map[string]bool{}
	for _, r := range rules {
		script.WriteString("-D" + strings.TrimPrefix(r, "-A") + "\n")
		fields := strings.Fields(r)
		for i, f := range fields {
			if f == "-j" && i+1 < len(fields) && strings.HasPrefix(fields[i+1], "CNI-") && !strings.HasPrefix(fields[i+1], "CNI-HOSTPORT-") {
				chains[fields[i+1]] = true
			}
		}
	}
	for c := range chains {
		script.WriteString("-F " + c + "\n-X " + c + "\n")
	}
	script.WriteString("COMMIT\n")
	return restore(script.Bytes())
}

func chainExists(table, chain string) bool {
	return exec.Command("iptables", "-w", "-t", table, "-nL", chain).Run() == nil
}

func restore(script []byte) error {
	cmd := exec.CommandContext(context.Background(), "iptables-restore", "-w", "--noflush")
	cmd.Stdin = bytes.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("iptables-restore: %v: %s\n%s", err, out, script)
	}
	return nil
}

// removeStaleBridges deletes test bridges ("tbt" + hex) left by a killed run
// that hold an address in podCIDR: their route would shadow the new
// bridge's, and the host could not reach the new pods.
func removeStaleBridges(podCIDR string) {
	_, want, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return
	}
	links, err := netlink.LinkList()
	if err != nil {
		return
	}
	for _, l := range links {
		if !strings.HasPrefix(l.Attrs().Name, "tbt") || l.Type() != "bridge" {
			continue
		}
		addrs, _ := netlink.AddrList(l, netlink.FAMILY_V4)
		for _, a := range addrs {
			if want.Contains(a.IP) {
				_ = netlink.LinkDel(l)
				break
			}
		}
	}
}

// removeStaleMasqueradeTables deletes test networks' masquerade tables
// ("tbt-<hex>-masq") left by a killed run for the same pod CIDR.
func removeStaleMasqueradeTables(podCIDR string) {
	c, err := nftables.New()
	if err != nil {
		return
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		return
	}
	for _, t := range tables {
		if !strings.HasPrefix(t.Name, "tbt-") || !strings.HasSuffix(t.Name, "-masq") {
			continue
		}
		rules, err := c.GetRules(t, &nftables.Chain{Name: "postrouting", Table: t})
		if err != nil {
			continue
		}
		for _, r := range rules {
			if cm, _ := userdata.GetString(r.UserData, userdata.TypeComment); strings.HasPrefix(cm+" ", network.MasqueradeComment+" "+podCIDR+" ") {
				c.DelTable(t)
				_ = c.Flush()
				break
			}
		}
	}
}
