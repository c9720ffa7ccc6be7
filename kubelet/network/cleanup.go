package network

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
)

// confDirMadeFile, in StateDir, names the topmost folder EnsureConfig
// created for ConfDir, so that Cleanup removes exactly what it made.
const confDirMadeFile = "conf-dir-made"

// makeConfDir creates ConfDir and records, the first time, the topmost
// folder it had to create.
func (m *Manager) makeConfDir() error { return MakeConfDir(m.cfg) }

// MakeConfDir creates cfg.ConfDir as the Manager does, recording the
// topmost folder it had to create so that Cleanup removes it. The kubelet
// calls it before starting a CRI runtime of its own, which would
// otherwise make the folder first (containerd's CRI plugin creates its
// CNI conf dir) and leave it looking like the operator's.
func MakeConfDir(cfg Config) error {
	m := &Manager{cfg: cfg}
	top := ""
	for d := m.cfg.ConfDir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		top = d
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(m.cfg.ConfDir, 0o755); err != nil {
		return err
	}
	if top == "" {
		return nil
	}
	if err := os.MkdirAll(m.cfg.StateDir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m.cfg.StateDir, confDirMadeFile), []byte(top+"\n"), 0o644)
}

// Cleanup removes what the node's pod network put on the host, once every
// pod is torn down (pod.RemoveAll): the masquerade table, and, when the
// default config is the kubelet's own, the bridge (it must have no ports
// left), the conflist and the folders EnsureConfig created for it, and
// portmap's top-level iptables chains if no pod of any network uses them,
// and the nat tables iptables made for them if nothing else is in them.
// An operator's config, and the bridge it names, are left alone. It
// carries on past failures and returns them all.
func (m *Manager) Cleanup() error {
	var errs []error
	if err := m.RemoveMasquerade(); err != nil {
		errs = append(errs, err)
	}
	ours := filepath.Join(m.cfg.ConfDir, DefaultConfFile)
	if _, err := os.Stat(ours); err == nil {
		if err := removeBridge(m.cfg.BridgeName); err != nil {
			errs = append(errs, err)
		}
		if err := os.Remove(ours); err != nil {
			errs = append(errs, err)
		} else {
			m.logger.Info("removed the default CNI config", "path", ours)
		}
	}
	if err := m.removeConfDir(); err != nil {
		errs = append(errs, err)
	}
	if err := DeleteUnusedHostportChains(); err != nil {
		errs = append(errs, err)
	}
	if err := deleteEmptyNATTables(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteEmptyNATTables removes the ip and ip6 "nat" tables when they hold
// no rule and no chain but iptables' base chains with an accept policy:
// what iptables (run by the portmap plugin) makes on first use on a host
// that had none. A table with anything in it (Docker's rules, a
// firewall's) is left alone; iptables makes the table again when it needs
// it.
func deleteEmptyNATTables() error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	deleted := false
	for _, fam := range []nftables.TableFamily{nftables.TableFamilyIPv4, nftables.TableFamilyIPv6} {
		tables, err := c.ListTablesOfFamily(fam)
		if err != nil {
			return fmt.Errorf("list nftables tables: %w", err)
		}
		chains, err := c.ListChainsOfTableFamily(fam)
		if err != nil {
			return fmt.Errorf("list nftables chains: %w", err)
		}
		for _, t := range tables {
			if t.Name != "nat" || !onlyEmptyBaseChains(c, t, chains) {
				continue
			}
			c.DelTable(t)
			deleted = true
		}
	}
	if !deleted {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete empty nat tables: %w", err)
	}
	return nil
}

// removeConfDir removes, if they are empty, ConfDir and its parents up to
// the topmost folder makeConfDir recorded.
func (m *Manager) removeConfDir() error {
	record := filepath.Join(m.cfg.StateDir, confDirMadeFile)
	b, err := os.ReadFile(record)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	top := strings.TrimSpace(string(b))
	if top != m.cfg.ConfDir && !strings.HasPrefix(m.cfg.ConfDir, top+"/") {
		return os.Remove(record) // made for another --cni-conf-dir
	}
	for d := m.cfg.ConfDir; ; d = filepath.Dir(d) {
		if err := os.Remove(d); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				if d == top {
					break
				}
				continue
			}
			return nil // not empty: the operator's now
		}
		if d == top {
			break
		}
	}
	return os.Remove(record)
}

// removeBridge deletes the bridge name if it exists and no link is
// attached to it.
func removeBridge(name string) error {
	br, err := netlink.LinkByName(name)
	if err != nil {
		return nil // gone (or never made: no pod ran)
	}
	if br.Type() != "bridge" {
		return nil
	}
	links, err := netlink.LinkList()
	if err != nil {
		return err
	}
	var ports []string
	for _, l := range links {
		if l.Attrs().MasterIndex == br.Attrs().Index {
			ports = append(ports, l.Attrs().Name)
		}
	}
	if len(ports) > 0 {
		return fmt.Errorf("bridge %s still has ports %v: not removed", name, ports)
	}
	if err := netlink.LinkDel(br); err != nil {
		return fmt.Errorf("delete bridge %s: %w", name, err)
	}
	return nil
}

// DeleteUnusedHostportChains removes the CNI portmap plugin's top-level
// nat chains (CNI-HOSTPORT-DNAT, -SETMARK, -MASQ) and the jumps to them
// when no pod of any network uses them (CNI-HOSTPORT-DNAT is empty). The
// plugin makes them on first use and never removes them; it makes them
// again when a pod needs them. Without iptables it does nothing.
func DeleteUnusedHostportChains() error {
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		return nil
	}
	var jumps []string
	present := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "-A CNI-HOSTPORT-DNAT ") {
			return nil // in use
		}
		if name, ok := strings.CutPrefix(line, ":"); ok {
			present[strings.Fields(name)[0]] = true
		}
		if strings.HasPrefix(line, "-A ") && !strings.HasPrefix(line, "-A CNI-HOSTPORT-") && strings.Contains(line, "-j CNI-HOSTPORT-") {
			jumps = append(jumps, line)
		}
	}
	var script bytes.Buffer
	script.WriteString("*nat\n")
	for _, j := range jumps {
		script.WriteString("-D" + strings.TrimPrefix(j, "-A") + "\n")
	}
	changed := len(jumps) > 0
	for _, c := range []string{"CNI-HOSTPORT-DNAT", "CNI-HOSTPORT-SETMARK", "CNI-HOSTPORT-MASQ"} {
		if present[c] {
			script.WriteString("-F " + c + "\n-X " + c + "\n")
			changed = true
		}
	}
	if !changed {
		return nil
	}
	script.WriteString("COMMIT\n")
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = bytes.NewReader(script.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("removing portmap's chains: iptables-restore: %v: %s", err, out)
	}
	return nil
}

// onlyEmptyBaseChains reports whether table t's chains (among chains) are
// all base chains with an accept policy and no rule.
func onlyEmptyBaseChains(c *nftables.Conn, t *nftables.Table, chains []*nftables.Chain) bool {
	for _, ch := range chains {
		if ch.Table.Name != t.Name {
			continue
		}
		if ch.Hooknum == nil || ch.Policy != nil && *ch.Policy != nftables.ChainPolicyAccept {
			return false
		}
		if rules, err := c.GetRules(t, ch); err != nil || len(rules) > 0 {
			return false
		}
	}
	return true
}
