package nftables

import (
	"maps"
	"net/netip"
	"slices"
)

// Changes turn one Ruleset into another. Deletions of elements and chains
// are listed separately from additions because a batch must drop the
// references to a chain before the chain itself (see table.apply).
type Changes struct {
	AddChains    []ServiceChain
	UpdateChains []ServiceChain
	DelChains    []string

	AddServiceIPs map[IPPortKey]string
	DelServiceIPs []IPPortKey
	AddNodePorts  map[PortKey]string
	DelNodePorts  []PortKey

	AddRejectIPs       []IPPortKey
	DelRejectIPs       []IPPortKey
	AddRejectNodePorts []PortKey
	DelRejectNodePorts []PortKey

	AddHairpin []netip.Addr
	DelHairpin []netip.Addr

	// StaleUDP are UDP flows to endpoints that left a service port:
	// conntrack would keep sending a client's datagrams to them.
	StaleUDP []StaleFlow
}

// StaleFlow identifies the conntrack entries of a removed UDP endpoint:
// flows to DstPort (on Dst, or on any address if Dst is invalid, as for a
// nodePort) answered by Endpoint.
type StaleFlow struct {
	Dst      netip.Addr
	DstPort  uint16
	Endpoint netip.Addr
}

// Empty reports whether there is nothing to change.
func (c *Changes) Empty() bool {
	return len(c.AddChains)+len(c.UpdateChains)+len(c.DelChains)+len(c.AddServiceIPs)+len(c.DelServiceIPs)+
		len(c.AddNodePorts)+len(c.DelNodePorts)+len(c.AddRejectIPs)+len(c.DelRejectIPs)+len(c.AddRejectNodePorts)+
		len(c.DelRejectNodePorts)+len(c.AddHairpin)+len(c.DelHairpin) == 0
}

// Append adds o's changes to c.
func (c *Changes) Append(o *Changes) {
	c.AddChains = append(c.AddChains, o.AddChains...)
	c.UpdateChains = append(c.UpdateChains, o.UpdateChains...)
	c.DelChains = append(c.DelChains, o.DelChains...)
	if c.AddServiceIPs == nil {
		c.AddServiceIPs = map[IPPortKey]string{}
	}
	maps.Copy(c.AddServiceIPs, o.AddServiceIPs)
	c.DelServiceIPs = append(c.DelServiceIPs, o.DelServiceIPs...)
	if c.AddNodePorts == nil {
		c.AddNodePorts = map[PortKey]string{}
	}
	maps.Copy(c.AddNodePorts, o.AddNodePorts)
	c.DelNodePorts = append(c.DelNodePorts, o.DelNodePorts...)
	c.AddRejectIPs = append(c.AddRejectIPs, o.AddRejectIPs...)
	c.DelRejectIPs = append(c.DelRejectIPs, o.DelRejectIPs...)
	c.AddRejectNodePorts = append(c.AddRejectNodePorts, o.AddRejectNodePorts...)
	c.DelRejectNodePorts = append(c.DelRejectNodePorts, o.DelRejectNodePorts...)
	c.AddHairpin = append(c.AddHairpin, o.AddHairpin...)
	c.DelHairpin = append(c.DelHairpin, o.DelHairpin...)
	c.StaleUDP = append(c.StaleUDP, o.StaleUDP...)
}

// Diff is what turns old into new (either may be nil: empty).
func Diff(old, new *Ruleset) *Changes {
	if old == nil {
		old = NewRuleset()
	}
	if new == nil {
		new = NewRuleset()
	}
	c := &Changes{AddServiceIPs: map[IPPortKey]string{}, AddNodePorts: map[PortKey]string{}}
	for _, name := range slices.Sorted(maps.Keys(new.Chains)) {
		nc := new.Chains[name]
		oc, ok := old.Chains[name]
		switch {
		case !ok:
			c.AddChains = append(c.AddChains, nc)
		case !oc.Equal(nc):
			c.UpdateChains = append(c.UpdateChains, nc)
			c.StaleUDP = append(c.StaleUDP, staleFlows(oc, nc.Endpoints)...)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.Chains)) {
		if _, ok := new.Chains[name]; !ok {
			c.DelChains = append(c.DelChains, name)
			c.StaleUDP = append(c.StaleUDP, staleFlows(old.Chains[name], nil)...)
		}
	}
	c.DelServiceIPs, c.AddServiceIPs = diffMap(old.ServiceIPs, new.ServiceIPs)
	c.DelNodePorts, c.AddNodePorts = diffMap(old.NodePorts, new.NodePorts)
	c.DelRejectIPs, c.AddRejectIPs = diffSet(old.RejectIPs, new.RejectIPs)
	c.DelRejectNodePorts, c.AddRejectNodePorts = diffSet(old.RejectNodePorts, new.RejectNodePorts)
	c.DelHairpin, c.AddHairpin = diffSet(old.Hairpin, new.Hairpin)
	return c
}

// staleFlows lists the UDP flows of old's endpoints that are not in keep.
func staleFlows(old ServiceChain, keep []Endpoint) []StaleFlow {
	if old.Protocol != UDP {
		return nil
	}
	var out []StaleFlow
	for _, e := range old.Endpoints {
		if slices.Contains(keep, e) {
			continue
		}
		if old.ClusterIP.IsValid() { // not for an external chain: its service chain has the ClusterIP
			out = append(out, StaleFlow{Dst: old.ClusterIP, DstPort: old.Port, Endpoint: e.IP})
		}
		if old.NodePort != 0 {
			out = append(out, StaleFlow{DstPort: old.NodePort, Endpoint: e.IP})
		}
		// The load-balancer addresses reach the service chain (or, under
		// externalTrafficPolicy Local, the external one, whose endpoints
		// are among the service chain's): flows to them too.
		if old.ClusterIP.IsValid() {
			for _, lb := range old.LoadBalancerIPs {
				out = append(out, StaleFlow{Dst: lb, DstPort: old.Port, Endpoint: e.IP})
			}
		}
	}
	return out
}

// diffMap returns the keys to delete (gone or changed) and the elements to
// add (new or changed).
func diffMap[K comparable](old, new map[K]string) ([]K, map[K]string) {
	var del []K
	add := map[K]string{}
	for k, v := range old {
		if nv, ok := new[k]; !ok || nv != v {
			del = append(del, k)
		}
	}
	for k, v := range new {
		if ov, ok := old[k]; !ok || ov != v {
			add[k] = v
		}
	}
	return del, add
}

func diffSet[K comparable](old, new map[K]struct{}) (del, add []K) {
	for k := range old {
		if _, ok := new[k]; !ok {
			del = append(del, k)
		}
	}
	for k := range new {
		if _, ok := old[k]; !ok {
			add = append(add, k)
		}
	}
	return del, add
}
