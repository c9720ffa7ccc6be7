package netpol

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"

	"github.com/tugboat/tugboat/api/netpolicy"
)

// Verdict ends a rule.
type Verdict uint8

const (
	// Accept: the connection passes this hook (the other base chain of
	// the hook still judges the other direction).
	Accept Verdict = iota
	// Jump into Rule.Target and come back.
	Jump
	// Drop, counted: the isolated pod's policies allowed nothing.
	Drop
)

// Field is the address a rule's peer match reads.
type Field uint8

const (
	Saddr Field = iota // ingress rules: the source
	Daddr              // egress rules: the destination
)

// Tuple is an element of a named-port set: ip daddr . meta l4proto . th dport.
type Tuple struct {
	IP    netip.Addr
	Proto uint8
	Port  uint16
}

// Rule is one nftables rule; every match given must hold.
type Rule struct {
	// Field is what Addrs and Prefix match.
	Field Field
	// Addrs: the address is one of these (a set; nil: no match on it).
	Addrs []netip.Addr
	// Prefix (if valid): the address is in it and in none of Except.
	Prefix netip.Prefix
	Except []netip.Prefix
	// Proto (0: any) and the destination port range (0: any).
	Proto            uint8
	PortMin, PortMax uint16
	// Named: ip daddr . meta l4proto . th dport is one of these.
	Named   []Tuple
	Verdict Verdict
	Target  string // Jump's chain
}

// Ruleset is the table's content (its fixed base chains aside).
type Ruleset struct {
	// Chains are the pod chains and the policy chains, by name.
	Chains map[string][]Rule
	// Ingress and Egress map an isolated local pod's address to its pod
	// chain (the verdict maps ingress-pods and egress-pods).
	Ingress, Egress map[netip.Addr]string
	// Isolating names, per pod chain, the policies that isolate it (the
	// drop counters are reported per policy).
	Isolating map[string][]string
}

// Input is what a node's rules are built from.
type Input struct {
	// Node is this node's name: its pods are the ones enforced here.
	Node string
	// Policies are every policy, parsed.
	Policies []*netpolicy.Policy
	// Endpoints are every pod with an address (and the cluster DNS as
	// kube-system/kube-dns, see agent.go).
	Endpoints []netpolicy.Endpoint
	// Namespaces gives the namespaces' labels.
	Namespaces netpolicy.Namespaces
}

func protoNumber(p string) uint8 {
	switch p {
	case netpolicy.UDP:
		return 17
	case netpolicy.SCTP:
		return 132
	default:
		return 6
	}
}

// Build computes the node's rules: for each local pod that a policy
// isolates, per direction, a pod chain that jumps into each of its
// policies' chains and then drops; for each such policy and direction, a
// chain whose rules accept what the policy allows. Pure and deterministic.
func Build(in Input) *Ruleset {
	rs := &Ruleset{Chains: map[string][]Rule{}, Ingress: map[netip.Addr]string{}, Egress: map[netip.Addr]string{}, Isolating: map[string][]string{}}
	pols := slices.Clone(in.Policies)
	slices.SortFunc(pols, func(a, b *netpolicy.Policy) int { return cmp.Compare(a.Key(), b.Key()) })
	var local []*netpolicy.Endpoint
	for i := range in.Endpoints {
		if e := &in.Endpoints[i]; e.NodeName == in.Node && in.Node != "" {
			local = append(local, e)
		}
	}
	slices.SortFunc(local, func(a, b *netpolicy.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	// Local pods per policy, then the policy chains that some local pod uses.
	for _, dir := range []Field{Saddr, Daddr} {
		for _, p := range pols {
			if (dir == Saddr && !p.Ingress) || (dir == Daddr && !p.Egress) {
				continue
			}
			var selected []*netpolicy.Endpoint
			for _, e := range local {
				if p.Selects(e) {
					selected = append(selected, e)
				}
			}
			if len(selected) == 0 {
				continue
			}
			pc := chainName(dir, "np", p.Key())
			if dir == Saddr {
				rs.Chains[pc] = policyRules(p, p.IngressRules, Saddr, selected, in)
			} else {
				rs.Chains[pc] = policyRules(p, p.EgressRules, Daddr, selected, in)
			}
			for _, e := range selected {
				podc := chainName(dir, "pod", e.Namespace+"/"+e.Name)
				m := rs.Ingress
				if dir == Daddr {
					m = rs.Egress
				}
				if _, taken := m[e.IP]; taken && m[e.IP] != podc {
					continue // two local pods with one address: the first by name keeps it
				}
				m[e.IP] = podc
				rs.Chains[podc] = append(rs.Chains[podc], Rule{Verdict: Jump, Target: pc})
				rs.Isolating[podc] = append(rs.Isolating[podc], p.Key())
			}
		}
	}
	for name, rules := range rs.Chains {
		if _, isPod := rs.Isolating[name]; isPod {
			rs.Chains[name] = append(rules, Rule{Verdict: Drop})
		}
	}
	return rs
}

// policyRules are one direction's rules of a policy as nftables rules
// that accept: per rule and port, one rule for its pod peers (an address
// set) and one per ipBlock. A rule whose peers match no address, or whose
// named port no pod has, gives none.
func policyRules(p *netpolicy.Policy, rules []netpolicy.Rule, field Field, selected []*netpolicy.Endpoint, in Input) []Rule {
	var out []Rule
	for _, r := range rules {
		var addrs []netip.Addr
		var blocks []*netpolicy.Block
		var peerPods []*netpolicy.Endpoint
		for i := range r.Peers {
			peer := &r.Peers[i]
			if peer.Block != nil {
				blocks = append(blocks, peer.Block)
				continue
			}
			for j := range in.Endpoints {
				if e := &in.Endpoints[j]; peer.MatchesPod(p.Namespace, e, in.Namespaces) && !slices.Contains(peerPods, e) {
					peerPods = append(peerPods, e)
				}
			}
		}
		for _, e := range peerPods {
			addrs = append(addrs, e.IP)
		}
		addrs = sortedUnique(addrs)
		anyPeer := len(r.Peers) == 0
		ports := r.Ports
		if len(ports) == 0 {
			ports = []netpolicy.Port{{}} // any protocol, any port
		}
		for _, pt := range ports {
			base := Rule{Field: field}
			if pt.Protocol != "" {
				base.Proto = protoNumber(pt.Protocol)
				base.PortMin, base.PortMax = pt.Port, pt.End
			}
			if pt.Name != "" {
				// The named port is the destination pod's: ingress, the
				// selected local pods'; egress, the peer pods' (or every
				// pod's when any peer is allowed).
				dsts := selected
				if field == Daddr {
					dsts = peerPods
					if anyPeer {
						dsts = nil
						for j := range in.Endpoints {
							dsts = append(dsts, &in.Endpoints[j])
						}
					}
				}
				base.Proto, base.PortMin, base.PortMax = 0, 0, 0
				base.Named = namedTuples(dsts, pt)
				if len(base.Named) == 0 {
					continue
				}
				if field == Daddr {
					out = append(out, base) // the tuples already name the peers
					continue
				}
			}
			if anyPeer {
				out = append(out, base)
				continue
			}
			if len(addrs) > 0 {
				r := base
				r.Addrs = addrs
				out = append(out, r)
			}
			for _, b := range blocks {
				r := base
				r.Prefix, r.Except = b.CIDR, b.Except
				out = append(out, r)
			}
		}
	}
	return out
}

func namedTuples(dsts []*netpolicy.Endpoint, pt netpolicy.Port) []Tuple {
	var out []Tuple
	for _, e := range dsts {
		if np, ok := e.NamedPorts[pt.Name]; ok && np.Protocol == pt.Protocol {
			out = append(out, Tuple{IP: e.IP, Proto: protoNumber(np.Protocol), Port: np.Port})
		}
	}
	slices.SortFunc(out, func(a, b Tuple) int {
		return cmp.Or(a.IP.Compare(b.IP), cmp.Compare(a.Proto, b.Proto), cmp.Compare(a.Port, b.Port))
	})
	return slices.Compact(out)
}

func sortedUnique(a []netip.Addr) []netip.Addr {
	slices.SortFunc(a, netip.Addr.Compare)
	return slices.Compact(a)
}

// maxChainName keeps names under nftables' 256-byte limit.
const maxChainName = 200

// chainName is "<kind>-in/<ns>/<name>" or "<kind>-out/…" (kind pod or
// np), with a long key shortened and made unique by a hash.
func chainName(dir Field, kind, key string) string {
	d := "-in/"
	if dir == Daddr {
		d = "-out/"
	}
	n := kind + d + key
	if len(n) > maxChainName {
		h := sha256.Sum256([]byte(n))
		n = n[:maxChainName-17] + "-" + hex.EncodeToString(h[:8])
	}
	return n
}
