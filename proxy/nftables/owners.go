package nftables

import (
	"maps"
	"net/netip"
	"slices"
)

// Ownership of the table's shared elements. A ClusterIP:port or nodePort
// belongs to one Service (the first to claim it; the apiserver allocates
// them uniquely, so a clash only lives while two Services swap one), and
// an endpoint address stays in the hairpin set while any Service balances
// to it. Only Run's goroutine touches this state; a full sync rebuilds it.

// claim drops from rs the keys another Service holds and records rs's keys
// as key's. The apiserver allocates ClusterIPs and nodePorts uniquely, so
// a conflict only lives while two Services swap an address.
func (d *Datapath) claim(key string, rs *Ruleset) {
	if rs == nil {
		return
	}
	var lost []string
	for k := range rs.ServiceIPs {
		if o, ok := d.ipOwner[k]; ok && o != key {
			lost = append(lost, k.String()+" (held by "+o+")")
			delete(rs.ServiceIPs, k)
		}
	}
	for k := range rs.RejectIPs {
		if o, ok := d.ipOwner[k]; ok && o != key {
			lost = append(lost, k.String()+" (held by "+o+")")
			delete(rs.RejectIPs, k)
		}
	}
	for k := range rs.NodePorts {
		if o, ok := d.portOwner[k]; ok && o != key {
			lost = append(lost, "nodePort "+k.String()+" (held by "+o+")")
			delete(rs.NodePorts, k)
		}
	}
	for k := range rs.RejectNodePorts {
		if o, ok := d.portOwner[k]; ok && o != key {
			lost = append(lost, "nodePort "+k.String()+" (held by "+o+")")
			delete(rs.RejectNodePorts, k)
		}
	}
	if len(lost) > 0 {
		d.log.Warn("service shares addresses with another; skipping them", "service", key, "keys", lost)
	}
	for k := range rs.ServiceIPs {
		d.ipOwner[k] = key
	}
	for k := range rs.RejectIPs {
		d.ipOwner[k] = key
	}
	for k := range rs.NodePorts {
		d.portOwner[k] = key
	}
	for k := range rs.RejectNodePorts {
		d.portOwner[k] = key
	}
}

// release forgets the keys of key's old ruleset.
func (d *Datapath) release(key string, rs *Ruleset) {
	if rs == nil {
		return
	}
	for _, ks := range [][]IPPortKey{slices.Collect(maps.Keys(rs.ServiceIPs)), slices.Collect(maps.Keys(rs.RejectIPs))} {
		for _, k := range ks {
			if d.ipOwner[k] == key {
				delete(d.ipOwner, k)
			}
		}
	}
	for _, ks := range [][]PortKey{slices.Collect(maps.Keys(rs.NodePorts)), slices.Collect(maps.Keys(rs.RejectNodePorts))} {
		for _, k := range ks {
			if d.portOwner[k] == key {
				delete(d.portOwner, k)
			}
		}
	}
}

// countHairpin turns one Service's hairpin changes into the table's: an
// address is in the set while any Service has it as an endpoint.
func (d *Datapath) countHairpin(add, del []netip.Addr) (tableAdd, tableDel []netip.Addr) {
	for _, a := range del {
		d.hairpinRefs[a]--
		if d.hairpinRefs[a] <= 0 {
			delete(d.hairpinRefs, a)
			tableDel = append(tableDel, a)
		}
	}
	for _, a := range add {
		d.hairpinRefs[a]++
		if d.hairpinRefs[a] == 1 {
			tableAdd = append(tableAdd, a)
		}
	}
	return tableAdd, tableDel
}
