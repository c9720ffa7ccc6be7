package network

import (
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"
)

// Pod egress masquerading. The default config leaves the bridge plugin's
// ipMasq off: that option adds a chain and two iptables rules per pod, by
// running the iptables command some six times on every ADD and DEL, under
// the xtables lock, which made it the largest part of a pod's CNI time.
// Instead the node has one nftables rule for its whole pod CIDR, which the
// kubelet keeps (EnsureMasquerade, called after EnsureConfig each time it
// checks the network):
//
//	table ip <network>-masq {
//	  chain postrouting {
//	    type nat hook postrouting priority srcnat;
//	    ip saddr <podCIDR> ip daddr != <podCIDR> [ip daddr != <clusterCIDR>] ip daddr != 224.0.0.0/4 masquerade comment "tugboat pod egress masquerade <podCIDR>[ except <clusterCIDR>]"
//	  }
//	}
//
// which is what the bridge plugin's per-pod rules did, and with a cluster
// CIDR (Config.ClusterCIDR) also leaves pod-to-pod traffic across nodes
// unmasqueraded, as Kubernetes' network model wants. With NoMasquerade,
// or with an operator's config in effect, the table is removed.

const masqChain = "postrouting"

// MasqueradeComment starts the comment of the masquerade rule; the pod
// CIDR follows it.
const MasqueradeComment = "tugboat pod egress masquerade"

// MasqueradeTable is the name of the node's masquerade table.
func (c Config) MasqueradeTable() string { return c.NetworkName + "-masq" }

// EnsureMasquerade makes the node's masquerade table hold exactly the rule
// for the pod CIDR when the default config is in effect and masquerading
// is on, and removes the table otherwise. It reads the table first and
// changes nothing when it is right, so it is cheap to call periodically
// (after EnsureConfig).
func (m *Manager) EnsureMasquerade() error {
	want := false
	if !m.cfg.NoMasquerade && m.cfg.PodCIDR != "" {
		files, err := confFiles(m.cfg.ConfDir)
		if err != nil {
			return fmt.Errorf("CNI config dir %s: %w", m.cfg.ConfDir, err)
		}
		want = len(files) > 0 && files[0] == filepath.Join(m.cfg.ConfDir, DefaultConfFile)
	}
	return m.ensureMasquerade(want)
}

func (m *Manager) ensureMasquerade(want bool) error {
	name := m.cfg.MasqueradeTable()
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("masquerade table %s: %w", name, err)
	}
	table := &nftables.Table{Name: name, Family: nftables.TableFamilyIPv4}
	exists := true
	rules, err := c.GetRules(table, &nftables.Chain{Name: masqChain, Table: table})
	if errors.Is(err, unix.ENOENT) {
		exists, rules, err = false, nil, nil
	}
	if err != nil {
		return fmt.Errorf("masquerade table %s: %w", name, err)
	}
	if !want {
		if !exists {
			return nil
		}
		c.DelTable(table)
		if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("remove masquerade table %s: %w", name, err)
		}
		return nil
	}
	cidr, err := netip.ParsePrefix(m.cfg.PodCIDR)
	if err != nil || !cidr.Addr().Is4() {
		return fmt.Errorf("masquerade table %s: pod CIDR %q is not an IPv4 prefix", name, m.cfg.PodCIDR)
	}
	comment := MasqueradeComment + " " + cidr.Masked().String()
	var cluster netip.Prefix
	if m.cfg.ClusterCIDR != "" {
		cluster = netip.MustParsePrefix(m.cfg.ClusterCIDR) // validated by New
		comment += " except " + cluster.String()
	}
	if len(rules) == 1 {
		if got, _ := userdata.GetString(rules[0].UserData, userdata.TypeComment); got == comment {
			return nil
		}
	}
	// Replace the table in one transaction: add (a no-op if it exists),
	// delete, add again, so no packet sees a half-made table.
	c.AddTable(table)
	c.DelTable(table)
	c.AddTable(table)
	chain := c.AddChain(&nftables.Chain{
		Name:     masqChain,
		Table:    table,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
	})
	var exprs []expr.Any
	exprs = append(exprs, ipMatch(12, cidr, expr.CmpOpEq)...)
	exprs = append(exprs, ipMatch(16, cidr, expr.CmpOpNeq)...)
	if cluster.IsValid() {
		exprs = append(exprs, ipMatch(16, cluster, expr.CmpOpNeq)...)
	}
	exprs = append(exprs, ipMatch(16, netip.MustParsePrefix("224.0.0.0/4"), expr.CmpOpNeq)...)
	exprs = append(exprs, &expr.Masq{})
	c.AddRule(&nftables.Rule{Table: table, Chain: chain, Exprs: exprs, UserData: userdata.AppendString(nil, userdata.TypeComment, comment)})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("write masquerade table %s: %w", name, err)
	}
	m.logger.Info("pod egress masquerade set", "table", name, "podCIDR", cidr.Masked())
	return nil
}

// ipMatch compares the IPv4 address at offset (12 source, 16 destination)
// of the network header, masked to p's length, with p's address.
func ipMatch(offset uint32, p netip.Prefix, op expr.CmpOp) []expr.Any {
	mask := make([]byte, 4)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	addr := p.Masked().Addr().As4()
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: op, Register: 1, Data: addr[:]},
	}
}

// RemoveMasquerade removes the node's masquerade table, if there is one.
func (m *Manager) RemoveMasquerade() error { return m.ensureMasquerade(false) }
