package netpol

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"syscall"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"

	datapath "github.com/tugboat/tugboat/proxy/nftables"
)

// Names of the table's fixed objects.
const (
	mapIngress = "ingress-pods"
	mapEgress  = "egress-pods"

	reg1  = 1
	reg9  = 9
	reg10 = 10

	prioFilter = 0 // NF_IP_PRI_FILTER
	// elemsPerMessage bounds the elements of one netlink message.
	elemsPerMessage = 256
)

var tupleType = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetProto, nftables.TypeInetService)

// table programs the policy table over netlink; it keeps no state.
type table struct {
	datapath.Handle
}

func newTable(name string, netns int) *table {
	return &table{datapath.Handle{Name: name, NetNS: netns}}
}

func (t *table) maps() (in, out *nftables.Set) {
	tbl := t.Table()
	return &nftables.Set{Table: tbl, Name: mapIngress, IsMap: true, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict},
		&nftables.Set{Table: tbl, Name: mapEgress, IsMap: true, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict}
}

func (t *table) chain(name string) *nftables.Chain {
	return &nftables.Chain{Name: name, Table: t.Table()}
}

// recreate replaces the table by its base chains and rs, in one
// transaction:
//
//	chain egress       { type filter hook forward priority filter; ct state established,related accept; ip saddr vmap @egress-pods }
//	chain egress-local { type filter hook input priority filter;   ct state established,related accept; ip saddr vmap @egress-pods }
//	chain ingress      { type filter hook forward priority filter + 1; ct state established,related accept; ip daddr vmap @ingress-pods }
//
// An accept ends only its own base chain, so a forwarded connection
// between two pods passes the sender's egress chain and then, separately,
// the receiver's ingress chain; a drop in either is final.
func (t *table) recreate(rs *Ruleset) error {
	c, err := t.Conn()
	if err != nil {
		return err
	}
	tbl := t.Table()
	c.AddTable(tbl)
	c.DelTable(tbl)
	c.AddTable(tbl)
	in, out := t.maps()
	for _, m := range []*nftables.Set{in, out} {
		if err := c.AddSet(m, nil); err != nil {
			return fmt.Errorf("map %s: %w", m.Name, err)
		}
	}
	all := Diff(nil, rs)
	if err := t.changes(c, all); err != nil {
		return err
	}
	for _, b := range []struct {
		name  string
		hook  *nftables.ChainHook
		prio  int32
		field uint32
		m     *nftables.Set
	}{
		{"egress", nftables.ChainHookForward, prioFilter, 12, out},
		{"egress-local", nftables.ChainHookInput, prioFilter, 12, out},
		{"ingress", nftables.ChainHookForward, prioFilter + 1, 16, in},
	} {
		accept := nftables.ChainPolicyAccept
		ch := c.AddChain(&nftables.Chain{Name: b.name, Table: tbl, Type: nftables.ChainTypeFilter, Hooknum: b.hook,
			Priority: nftables.ChainPriorityRef(nftables.ChainPriority(b.prio)), Policy: &accept})
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: ctEstablishedAccept()})
		c.AddRule(&nftables.Rule{Table: tbl, Chain: ch, Exprs: []expr.Any{
			&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: b.field, Len: 4},
			&expr.Lookup{SourceRegister: reg1, SetName: b.m.Name, SetID: b.m.ID, IsDestRegSet: true},
		}})
	}
	return c.Flush()
}

// apply makes ch in one transaction.
func (t *table) apply(ch *Changes) error {
	c, err := t.Conn()
	if err != nil {
		return err
	}
	if err := t.changes(c, ch); err != nil {
		return err
	}
	return c.Flush()
}

// changes queues ch on c in a safe order: chains exist before anything
// jumps to them, and nothing refers to a chain when it is deleted.
func (t *table) changes(c *nftables.Conn, ch *Changes) error {
	in, out := t.maps()
	isNew := map[string]bool{}
	for _, name := range ch.NewChains {
		c.AddChain(t.chain(name))
		isNew[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(ch.SetChains)) {
		chain := t.chain(name)
		if !isNew[name] {
			c.FlushChain(chain)
		}
		for _, r := range ch.SetChains[name] {
			exprs, err := ruleExprs(c, chain.Table, r)
			if err != nil {
				return fmt.Errorf("chain %s: %w", name, err)
			}
			c.AddRule(&nftables.Rule{Table: chain.Table, Chain: chain, Exprs: exprs})
		}
	}
	for _, d := range []struct {
		m   *nftables.Set
		del []netip.Addr
		add map[netip.Addr]string
	}{{in, ch.DelIngress, ch.AddIngress}, {out, ch.DelEgress, ch.AddEgress}} {
		for chunk := range slices.Chunk(d.del, elemsPerMessage) {
			elems := make([]nftables.SetElement, len(chunk))
			for i, ip := range chunk {
				elems[i] = nftables.SetElement{Key: addrBytes(ip)}
			}
			if err := c.SetDeleteElements(d.m, elems); err != nil {
				return fmt.Errorf("map %s: %w", d.m.Name, err)
			}
		}
		var elems []nftables.SetElement
		for _, ip := range slices.SortedFunc(maps.Keys(d.add), netip.Addr.Compare) {
			elems = append(elems, nftables.SetElement{Key: addrBytes(ip), VerdictData: &expr.Verdict{Kind: expr.VerdictGoto, Chain: d.add[ip]}})
		}
		for chunk := range slices.Chunk(elems, elemsPerMessage) {
			if err := c.SetAddElements(d.m, chunk); err != nil {
				return fmt.Errorf("map %s: %w", d.m.Name, err)
			}
		}
	}
	for _, name := range ch.DelChains {
		c.FlushChain(t.chain(name))
	}
	for _, name := range ch.DelChains {
		c.DelChain(t.chain(name))
	}
	return nil
}

func addrBytes(ip netip.Addr) []byte { a := ip.As4(); return a[:] }

func native32(v uint32) []byte { return binaryutil.NativeEndian.PutUint32(v) }

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// ctEstablishedAccept is ct state established,related accept.
func ctEstablishedAccept() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: reg1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4,
			Mask: native32(expr.CtStateBitESTABLISHED | expr.CtStateBitRELATED), Xor: native32(0)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: reg1, Data: native32(0)},
		&expr.Verdict{Kind: expr.VerdictAccept},
	}
}

// ruleExprs compiles one Rule; anonymous sets it needs are added to c.
func ruleExprs(c *nftables.Conn, tbl *nftables.Table, r Rule) ([]expr.Any, error) {
	var out []expr.Any
	off := uint32(12)
	if r.Field == Daddr {
		off = 16
	}
	loadAddr := &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4}
	switch n := len(r.Addrs); {
	case n == 1:
		out = append(out, loadAddr, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: addrBytes(r.Addrs[0])})
	case n > 1:
		s := &nftables.Set{Table: tbl, Anonymous: true, Constant: true, KeyType: nftables.TypeIPAddr}
		elems := make([]nftables.SetElement, n)
		for i, ip := range r.Addrs {
			elems[i] = nftables.SetElement{Key: addrBytes(ip)}
		}
		if err := c.AddSet(s, elems); err != nil {
			return nil, fmt.Errorf("address set: %w", err)
		}
		out = append(out, loadAddr, &expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID})
	}
	if r.Prefix.IsValid() {
		out = append(out, prefixMatch(loadAddr, r.Prefix, expr.CmpOpEq)...)
		for _, e := range r.Except {
			out = append(out, prefixMatch(loadAddr, e, expr.CmpOpNeq)...)
		}
	}
	if r.Proto != 0 {
		out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg1}, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: []byte{r.Proto}})
		if r.PortMin != 0 {
			out = append(out, &expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
			if r.PortMax <= r.PortMin {
				out = append(out, &expr.Cmp{Op: expr.CmpOpEq, Register: reg1, Data: binaryutil.BigEndian.PutUint16(r.PortMin)})
			} else {
				out = append(out, &expr.Range{Op: expr.CmpOpEq, Register: reg1,
					FromData: binaryutil.BigEndian.PutUint16(r.PortMin), ToData: binaryutil.BigEndian.PutUint16(r.PortMax)})
			}
		}
	}
	if len(r.Named) > 0 {
		s := &nftables.Set{Table: tbl, Anonymous: true, Constant: true, KeyType: tupleType}
		elems := make([]nftables.SetElement, len(r.Named))
		for i, tu := range r.Named {
			k := append(addrBytes(tu.IP), pad4([]byte{tu.Proto})...)
			elems[i] = nftables.SetElement{Key: append(k, pad4(binaryutil.BigEndian.PutUint16(tu.Port))...)}
		}
		if err := c.AddSet(s, elems); err != nil {
			return nil, fmt.Errorf("named-port set: %w", err)
		}
		out = append(out,
			&expr.Payload{DestRegister: reg1, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: reg9},
			&expr.Payload{DestRegister: reg10, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Lookup{SourceRegister: reg1, SetName: s.Name, SetID: s.ID})
	}
	switch r.Verdict {
	case Accept:
		out = append(out, &expr.Verdict{Kind: expr.VerdictAccept})
	case Jump:
		out = append(out, &expr.Verdict{Kind: expr.VerdictJump, Chain: r.Target})
	case Drop:
		out = append(out, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})
	}
	return out, nil
}

// prefixMatch is ip saddr|daddr [!=] prefix.
func prefixMatch(load *expr.Payload, p netip.Prefix, op expr.CmpOp) []expr.Any {
	mask := make([]byte, 4)
	for i := 0; i < p.Bits(); i++ {
		mask[i/8] |= 0x80 >> (i % 8)
	}
	l := *load
	return []expr.Any{&l,
		&expr.Bitwise{SourceRegister: reg1, DestRegister: reg1, Len: 4, Mask: mask, Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: op, Register: reg1, Data: addrBytes(p.Masked().Addr())},
	}
}

// drops reads the packet counters of the pod chains' drop rules.
func (t *table) drops(chains []string) (map[string]uint64, error) {
	c, err := t.Conn()
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, name := range chains {
		rules, err := c.GetRules(t.Table(), t.chain(name))
		if err != nil {
			if errors.Is(err, syscall.ENOENT) {
				continue
			}
			return nil, fmt.Errorf("chain %s: %w", name, err)
		}
		for _, r := range rules {
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					out[name] += ctr.Packets
				}
			}
		}
	}
	return out, nil
}
