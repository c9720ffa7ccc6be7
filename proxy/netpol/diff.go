package netpol

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
)

// Changes turn one Ruleset into another in one transaction.
type Changes struct {
	// NewChains are created, then NewChains and SetChains filled
	// (SetChains flushed first: they exist).
	NewChains []string
	SetChains map[string][]Rule
	// DelChains are flushed and deleted last, once nothing refers to them.
	DelChains []string
	// Verdict map elements: deletions first (a changed element is deleted
	// and added again).
	DelIngress, DelEgress []netip.Addr
	AddIngress, AddEgress map[netip.Addr]string
}

// Empty reports whether there is nothing to do.
func (c *Changes) Empty() bool {
	return len(c.NewChains) == 0 && len(c.SetChains) == 0 && len(c.DelChains) == 0 &&
		len(c.DelIngress) == 0 && len(c.DelEgress) == 0 && len(c.AddIngress) == 0 && len(c.AddEgress) == 0
}

// Diff is what turns old (nil: an empty table) into new: only the chains
// whose rules differ are rewritten, only the map elements that differ
// are touched, so the batch follows the change, not the cluster.
func Diff(old, new *Ruleset) *Changes {
	if old == nil {
		old = &Ruleset{}
	}
	c := &Changes{SetChains: map[string][]Rule{}, AddIngress: map[netip.Addr]string{}, AddEgress: map[netip.Addr]string{}}
	for _, name := range slices.Sorted(maps.Keys(new.Chains)) {
		rules := new.Chains[name]
		have, ok := old.Chains[name]
		if !ok {
			c.NewChains = append(c.NewChains, name)
			c.SetChains[name] = rules
		} else if !reflect.DeepEqual(have, rules) {
			c.SetChains[name] = rules
		}
	}
	for _, name := range slices.Sorted(maps.Keys(old.Chains)) {
		if _, ok := new.Chains[name]; !ok {
			c.DelChains = append(c.DelChains, name)
		}
	}
	c.DelIngress = diffMap(old.Ingress, new.Ingress, c.AddIngress)
	c.DelEgress = diffMap(old.Egress, new.Egress, c.AddEgress)
	return c
}

func diffMap(old, new map[netip.Addr]string, add map[netip.Addr]string) []netip.Addr {
	var del []netip.Addr
	for ip, chain := range old {
		if n, ok := new[ip]; !ok || n != chain {
			del = append(del, ip)
		}
	}
	for ip, chain := range new {
		if o, ok := old[ip]; !ok || o != chain {
			add[ip] = chain
		}
	}
	slices.SortFunc(del, netip.Addr.Compare)
	return del
}
