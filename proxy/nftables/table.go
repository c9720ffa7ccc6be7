package nftables

import (
	"fmt"
	"maps"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Names of the table's fixed objects.
const (
	setServiceIPs      = "service-ips"
	setNodePorts       = "service-nodeports"
	setRejectIPs       = "reject-ips"
	setRejectNodePorts = "reject-nodeports"
	setHairpin         = "hairpin"

	chainReject      = "reject"
	chainRejectCheck = "reject-check"
	chainServices    = "services"

	// elemsPerMessage bounds the elements of one netlink message: a
	// message's element list is one attribute, at most 64 KiB.
	elemsPerMessage = 256

	prioDstNAT          = -100 // NF_IP_PRI_NAT_DST
	prioSrcNAT          = 100  // NF_IP_PRI_NAT_SRC
	icmpPortUnreachable = 3
)

// table programs one nftables table over netlink. It keeps no state: the
// caller (Datapath) knows what it applied.
type table struct {
	Handle
}

// sets are the table's named sets and maps.
type sets struct {
	serviceIPs, nodePorts, rejectIPs, rejectNodePorts, hairpin *nftables.Set
}

func (t *table) sets() sets {
	tbl := t.Table()
	return sets{
		serviceIPs:      &nftables.Set{Table: tbl, Name: setServiceIPs, IsMap: true, KeyType: ipPortType, DataType: nftables.TypeVerdict},
		nodePorts:       &nftables.Set{Table: tbl, Name: setNodePorts, IsMap: true, KeyType: portType, DataType: nftables.TypeVerdict},
		rejectIPs:       &nftables.Set{Table: tbl, Name: setRejectIPs, KeyType: ipPortType},
		rejectNodePorts: &nftables.Set{Table: tbl, Name: setRejectNodePorts, KeyType: portType},
		hairpin:         &nftables.Set{Table: tbl, Name: setHairpin, KeyType: ipIPType},
	}
}

func (t *table) chain(name string) *nftables.Chain {
	return &nftables.Chain{Name: name, Table: t.Table()}
}

func baseChain(tbl *nftables.Table, name string, typ nftables.ChainType, hook *nftables.ChainHook, prio int32) *nftables.Chain {
	return &nftables.Chain{Name: name, Table: tbl, Type: typ, Hooknum: hook, Priority: nftables.ChainPriorityRef(nftables.ChainPriority(prio))}
}

// recreate replaces the table, whatever it holds, by the base chains and
// rs, in one transaction.
func (t *table) recreate(rs *Ruleset) error {
	c, err := t.Conn()
	if err != nil {
		return err
	}
	tbl := t.Table()
	c.AddTable(tbl) // so that the delete cannot fail with ENOENT
	c.DelTable(tbl)
	c.AddTable(tbl)
	s := t.sets()
	for _, set := range []*nftables.Set{s.serviceIPs, s.nodePorts, s.rejectIPs, s.rejectNodePorts, s.hairpin} {
		if err := c.AddSet(set, nil); err != nil {
			return fmt.Errorf("set %s: %w", set.Name, err)
		}
	}
	rule := func(ch *nftables.Chain, exprs ...expr.Any) {
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: exprs})
	}

	reject := c.AddChain(t.chain(chainReject))
	rule(reject, append(l4proto(TCP), &expr.Reject{Type: unix.NFT_REJECT_TCP_RST})...)
	rule(reject, &expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: icmpPortUnreachable})

	check := c.AddChain(t.chain(chainRejectCheck))
	rule(check, append(loadDaddrProtoPort(), setLookup(s.rejectIPs), verdict(expr.VerdictGoto, chainReject))...)
	rule(check, slices.Concat(localNonLoopbackDaddr(), loadProtoPort(), []expr.Any{setLookup(s.rejectNodePorts), verdict(expr.VerdictGoto, chainReject)})...)

	services := c.AddChain(t.chain(chainServices))
	rule(services, append(loadDaddrProtoPort(), vmapLookup(s.serviceIPs))...)
	rule(services, slices.Concat(localNonLoopbackDaddr(), loadProtoPort(), []expr.Any{vmapLookup(s.nodePorts)})...)

	// Every chain before any rule: an external chain's rules go to its
	// service chain.
	names := slices.Sorted(maps.Keys(rs.Chains))
	for _, name := range names {
		c.AddChain(t.chain(name))
	}
	for _, name := range names {
		if err := addServiceRules(c, t.chain(name), rs.Chains[name]); err != nil {
			return err
		}
	}

	// Hooks last (the batch is one transaction anyway).
	const filterPrio = prioDstNAT - 10
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"filter-prerouting", nftables.ChainHookPrerouting}, {"filter-output", nftables.ChainHookOutput}} {
		ch := c.AddChain(baseChain(tbl, h.name, nftables.ChainTypeFilter, h.hook, filterPrio))
		rule(ch, append(ctStateNew(), verdict(expr.VerdictJump, chainRejectCheck))...)
	}
	for _, h := range []struct {
		name string
		hook *nftables.ChainHook
	}{{"nat-prerouting", nftables.ChainHookPrerouting}, {"nat-output", nftables.ChainHookOutput}} {
		ch := c.AddChain(baseChain(tbl, h.name, nftables.ChainTypeNAT, h.hook, prioDstNAT))
		rule(ch, verdict(expr.VerdictJump, chainServices))
	}
	post := c.AddChain(baseChain(tbl, "nat-postrouting", nftables.ChainTypeNAT, nftables.ChainHookPostrouting, prioSrcNAT))
	rule(post, masqueradeHairpin(s.hairpin)...)
	rule(post, masqueradeMarked()...)

	all := &Changes{AddServiceIPs: rs.ServiceIPs, AddNodePorts: rs.NodePorts,
		AddRejectIPs: slices.Collect(maps.Keys(rs.RejectIPs)), AddRejectNodePorts: slices.Collect(maps.Keys(rs.RejectNodePorts)),
		AddHairpin: slices.Collect(maps.Keys(rs.Hairpin))}
	if err := addElements(c, s, all); err != nil {
		return err
	}
	return c.Flush()
}

// apply makes the changes in one transaction. Order matters within the
// batch: chains before the rules and elements that reach them, and the
// references to a chain (elements, other rules) gone before the chain.
func (t *table) apply(ch *Changes) error {
	c, err := t.Conn()
	if err != nil {
		return err
	}
	s := t.sets()
	for _, sc := range ch.AddChains {
		c.AddChain(t.chain(sc.Name))
	}
	for _, sc := range ch.AddChains {
		if err := addServiceRules(c, t.chain(sc.Name), sc); err != nil {
			return err
		}
	}
	for _, sc := range ch.UpdateChains {
		chain := t.chain(sc.Name)
		c.FlushChain(chain)
		if err := addServiceRules(c, chain, sc); err != nil {
			return err
		}
	}
	dels := []struct {
		set  *nftables.Set
		keys [][]byte
	}{
		{s.serviceIPs, keyBytes(ch.DelServiceIPs, ipPortKeyBytes)},
		{s.nodePorts, keyBytes(ch.DelNodePorts, portKeyBytes)},
		{s.rejectIPs, keyBytes(ch.DelRejectIPs, ipPortKeyBytes)},
		{s.rejectNodePorts, keyBytes(ch.DelRejectNodePorts, portKeyBytes)},
		{s.hairpin, keyBytes(ch.DelHairpin, hairpinKeyBytes)},
	}
	for _, d := range dels {
		for chunk := range slices.Chunk(d.keys, elemsPerMessage) {
			elems := make([]nftables.SetElement, len(chunk))
			for i, k := range chunk {
				elems[i] = nftables.SetElement{Key: k}
			}
			if err := c.SetDeleteElements(d.set, elems); err != nil {
				return fmt.Errorf("set %s: %w", d.set.Name, err)
			}
		}
	}
	if err := addElements(c, s, ch); err != nil {
		return err
	}
	for _, name := range ch.DelChains {
		c.FlushChain(t.chain(name))
	}
	for _, name := range ch.DelChains {
		c.DelChain(t.chain(name))
	}
	return c.Flush()
}

func keyBytes[K any](keys []K, enc func(K) []byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = enc(k)
	}
	return out
}

// addElements adds ch's element additions, in messages of at most
// elemsPerMessage elements.
func addElements(c *nftables.Conn, s sets, ch *Changes) error {
	var ips, nps, rips, rnps, hp []nftables.SetElement
	for _, k := range slices.SortedFunc(maps.Keys(ch.AddServiceIPs), compareIPPort) {
		ips = append(ips, nftables.SetElement{Key: ipPortKeyBytes(k), VerdictData: verdict(expr.VerdictGoto, ch.AddServiceIPs[k])})
	}
	for _, k := range slices.SortedFunc(maps.Keys(ch.AddNodePorts), comparePort) {
		nps = append(nps, nftables.SetElement{Key: portKeyBytes(k), VerdictData: verdict(expr.VerdictGoto, ch.AddNodePorts[k])})
	}
	for _, k := range ch.AddRejectIPs {
		rips = append(rips, nftables.SetElement{Key: ipPortKeyBytes(k)})
	}
	for _, k := range ch.AddRejectNodePorts {
		rnps = append(rnps, nftables.SetElement{Key: portKeyBytes(k)})
	}
	for _, a := range ch.AddHairpin {
		hp = append(hp, nftables.SetElement{Key: hairpinKeyBytes(a)})
	}
	for _, add := range []struct {
		set   *nftables.Set
		elems []nftables.SetElement
	}{{s.serviceIPs, ips}, {s.nodePorts, nps}, {s.rejectIPs, rips}, {s.rejectNodePorts, rnps}, {s.hairpin, hp}} {
		for chunk := range slices.Chunk(add.elems, elemsPerMessage) {
			if err := c.SetAddElements(add.set, chunk); err != nil {
				return fmt.Errorf("set %s: %w", add.set.Name, err)
			}
		}
	}
	return nil
}

func compareIPPort(a, b IPPortKey) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	if a.Protocol != b.Protocol {
		return int(a.Protocol) - int(b.Protocol)
	}
	return int(a.Port) - int(b.Port)
}

func comparePort(a, b PortKey) int {
	if a.Protocol != b.Protocol {
		return int(a.Protocol) - int(b.Protocol)
	}
	return int(a.Port) - int(b.Port)
}

// addServiceRules adds the rules of one service chain to ch.
func addServiceRules(c *nftables.Conn, ch *nftables.Chain, sc ServiceChain) error {
	tbl := ch.Table
	if sc.MasqueradeUnless.IsValid() {
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: append(saddrNotIn(sc.MasqueradeUnless), setMasqueradeMark()...)})
	}
	if sc.Cluster != "" {
		if sc.ShortCircuit.IsValid() {
			c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: append(saddrIn(sc.ShortCircuit), verdict(expr.VerdictGoto, sc.Cluster))})
		}
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: append(localSaddr(), verdict(expr.VerdictGoto, sc.Cluster))})
	}
	switch n := len(sc.Endpoints); n {
	case 0: // traffic policy Local, no local endpoint
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: []expr.Any{verdict(expr.VerdictDrop, "")}})
	case 1:
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: dnatOne(sc.Protocol, sc.Endpoints[0])})
	default:
		m := &nftables.Set{Table: tbl, Anonymous: true, Constant: true, IsMap: true,
			KeyType: nftables.TypeInteger, DataType: endpointType}
		elems := make([]nftables.SetElement, n)
		for i, e := range sc.Endpoints {
			elems[i] = nftables.SetElement{Key: binaryutil.BigEndian.PutUint32(uint32(i)), Val: endpointBytes(e)}
		}
		if err := c.AddSet(m, elems); err != nil {
			return fmt.Errorf("chain %s: endpoint map: %w", sc.Name, err)
		}
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: dnatNumgen(sc.Protocol, n, m)})
	}
	return nil
}
