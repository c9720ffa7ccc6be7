package nftables

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
)

// MasqueradeMark is the packet mark bit the service chains set on traffic
// to be masqueraded in postrouting (kube-proxy's bit).
const MasqueradeMark = 0x4000

// IPPortKey keys the ClusterIP maps: address . protocol . port.
type IPPortKey struct {
	IP       netip.Addr
	Protocol Protocol
	Port     uint16
}

func (k IPPortKey) String() string { return fmt.Sprintf("%s . %s . %d", k.IP, k.Protocol, k.Port) }

// PortKey keys the NodePort maps: protocol . port.
type PortKey struct {
	Protocol Protocol
	Port     uint16
}

func (k PortKey) String() string { return fmt.Sprintf("%s . %d", k.Protocol, k.Port) }

// ServiceChain is the chain of one service port with ready endpoints
// (svc-…), or the external chain of one with externalTrafficPolicy Local
// (external-…, Cluster set), reached from its nodePort and load-balancer
// addresses:
//
//	chain external-default/web/tcp/80 {
//	  ip saddr 10.244.0.0/16 goto svc-default/web/tcp/80    pods: cluster-wide, as for ClusterIP
//	  fib saddr type local goto svc-default/web/tcp/80      the node itself: masqueraded, cluster-wide
//	  meta l4proto tcp dnat to 10.244.1.2:8080               the node's endpoints, source kept (or: drop)
//	}
type ServiceChain struct {
	Name     string
	Protocol Protocol
	// MasqueradeUnless: packets from outside it are marked for masquerade
	// (invalid: none are).
	MasqueradeUnless netip.Prefix
	// Cluster, for an external chain, is the service chain that traffic
	// from ShortCircuit (pods) and from the node itself goes on to.
	Cluster string
	// ShortCircuit: packets from it go to Cluster (invalid: none do but
	// the node's own).
	ShortCircuit netip.Prefix
	// Endpoints: one or more, sorted; none (a node without local
	// endpoints, for traffic policy Local): the chain ends in drop.
	Endpoints []Endpoint
	// Where the chain is reached from; not part of its rules, kept to
	// clear stale UDP flows when endpoints go away (the load-balancer
	// addresses are not in Equal: a change of them alone rewrites no rule).
	ClusterIP       netip.Addr
	Port            uint16
	NodePort        uint16
	LoadBalancerIPs []netip.Addr
}

// Equal reports whether two chains hold the same rules and keys.
func (c ServiceChain) Equal(o ServiceChain) bool {
	return c.Name == o.Name && c.Protocol == o.Protocol && c.MasqueradeUnless == o.MasqueradeUnless &&
		c.Cluster == o.Cluster && c.ShortCircuit == o.ShortCircuit && c.ClusterIP == o.ClusterIP && c.Port == o.Port && c.NodePort == o.NodePort &&
		slices.Equal(c.Endpoints, o.Endpoints)
}

// Rules renders the chain's rules in nft syntax.
func (c ServiceChain) Rules() []string {
	var out []string
	if c.MasqueradeUnless.IsValid() {
		out = append(out, fmt.Sprintf("ip saddr != %s meta mark set meta mark | 0x%08x", c.MasqueradeUnless, MasqueradeMark))
	}
	if c.Cluster != "" {
		if c.ShortCircuit.IsValid() {
			out = append(out, fmt.Sprintf("ip saddr %s goto %s", c.ShortCircuit, c.Cluster))
		}
		out = append(out, "fib saddr type local goto "+c.Cluster)
	}
	switch len(c.Endpoints) {
	case 0:
		out = append(out, "drop")
	case 1:
		out = append(out, fmt.Sprintf("meta l4proto %s dnat to %s", c.Protocol, c.Endpoints[0]))
	default:
		elems := make([]string, len(c.Endpoints))
		for i, e := range c.Endpoints {
			elems[i] = fmt.Sprintf("%d : %s . %d", i, e.IP, e.Port)
		}
		out = append(out, fmt.Sprintf("meta l4proto %s dnat ip to numgen random mod %d map { %s }",
			c.Protocol, len(c.Endpoints), strings.Join(elems, ", ")))
	}
	return out
}

// Ruleset is what the table holds for some Services, apart from the fixed
// base chains: service chains, map and set elements.
type Ruleset struct {
	Chains          map[string]ServiceChain
	ServiceIPs      map[IPPortKey]string // -> goto chain
	NodePorts       map[PortKey]string   // -> goto chain
	RejectIPs       map[IPPortKey]struct{}
	RejectNodePorts map[PortKey]struct{}
	// Hairpin holds the endpoint addresses: a packet from one of them to
	// itself after DNAT is masqueraded.
	Hairpin map[netip.Addr]struct{}
}

// NewRuleset returns an empty ruleset.
func NewRuleset() *Ruleset {
	return &Ruleset{
		Chains: map[string]ServiceChain{}, ServiceIPs: map[IPPortKey]string{}, NodePorts: map[PortKey]string{},
		RejectIPs: map[IPPortKey]struct{}{}, RejectNodePorts: map[PortKey]struct{}{}, Hairpin: map[netip.Addr]struct{}{},
	}
}

// Options shape the rules.
type Options struct {
	// ClusterCIDR: traffic to a Service from outside it is masqueraded, so
	// that replies come back through this node. Invalid: nothing is
	// masqueraded but hairpin traffic.
	ClusterCIDR netip.Prefix
}

// MaxEndpoints bounds the endpoints of one service port: the numgen map
// of a chain is sent in one netlink attribute (64 KiB). Kubernetes caps an
// Endpoints object at the same number.
const MaxEndpoints = 1000

// Build is the ruleset for service ports (pure). A port with ready
// endpoints gets a service chain reached from its ClusterIP (and nodePort
// and load-balancer addresses); one without is rejected. With
// externalTrafficPolicy Local, the nodePort and load-balancer addresses
// reach an external chain instead, which sends pods and the node itself on
// to the service chain and everyone else to the node's own endpoints,
// unmasqueraded, or drops them if the node has none (kube-proxy's
// behaviour: the client is meant to retry another node, which a load
// balancer's health check steers it to). Endpoints past MaxEndpoints are
// left out. With internalTrafficPolicy Local the service chain has only
// the node's endpoints, and drops when it has none.
func Build(sps []ServicePort, opts Options) *Ruleset {
	rs := NewRuleset()
	for _, sp := range sps {
		if len(sp.Endpoints) > MaxEndpoints {
			sp.Endpoints = sp.Endpoints[:MaxEndpoints]
		}
		if len(sp.LocalEndpoints) > MaxEndpoints {
			sp.LocalEndpoints = sp.LocalEndpoints[:MaxEndpoints]
		}
		ipKey := IPPortKey{IP: sp.ClusterIP, Protocol: sp.Protocol, Port: sp.Port}
		npKey := PortKey{Protocol: sp.Protocol, Port: sp.NodePort}
		lbKeys := make([]IPPortKey, len(sp.LoadBalancerIPs))
		for i, a := range sp.LoadBalancerIPs {
			lbKeys[i] = IPPortKey{IP: a, Protocol: sp.Protocol, Port: sp.Port}
		}
		if len(sp.Endpoints) == 0 {
			rs.RejectIPs[ipKey] = struct{}{}
			for _, k := range lbKeys {
				rs.RejectIPs[k] = struct{}{}
			}
			if sp.NodePort != 0 {
				rs.RejectNodePorts[npKey] = struct{}{}
			}
			continue
		}
		name := sp.ChainName()
		chain := ServiceChain{
			Name: name, Protocol: sp.Protocol, MasqueradeUnless: opts.ClusterCIDR, Endpoints: slices.Clone(sp.Endpoints),
			ClusterIP: sp.ClusterIP, Port: sp.Port, NodePort: sp.NodePort, LoadBalancerIPs: slices.Clone(sp.LoadBalancerIPs),
		}
		if sp.InternalLocal {
			chain.Endpoints = slices.Clone(sp.LocalEndpoints)
			if len(chain.Endpoints) == 0 {
				chain.MasqueradeUnless = netip.Prefix{} // nothing to masquerade: it drops
			}
		}
		rs.Chains[name] = chain
		rs.ServiceIPs[ipKey] = name
		external := name
		if sp.ExternalLocal && (sp.NodePort != 0 || len(lbKeys) > 0) {
			external = sp.ExternalChainName()
			rs.Chains[external] = ServiceChain{
				Name: external, Protocol: sp.Protocol, Cluster: name, ShortCircuit: opts.ClusterCIDR,
				Endpoints: slices.Clone(sp.LocalEndpoints), NodePort: sp.NodePort,
			}
		}
		for _, k := range lbKeys {
			rs.ServiceIPs[k] = external
		}
		if sp.NodePort != 0 {
			rs.NodePorts[npKey] = external
		}
		for _, e := range sp.Endpoints {
			rs.Hairpin[e.IP] = struct{}{}
		}
	}
	return rs
}

// Len counts the ruleset's objects: chains, elements.
func (rs *Ruleset) Len() (chains, elements int) {
	return len(rs.Chains), len(rs.ServiceIPs) + len(rs.NodePorts) + len(rs.RejectIPs) + len(rs.RejectNodePorts) + len(rs.Hairpin)
}

// String renders the ruleset in nft syntax, sorted, for tests and debugging.
func (rs *Ruleset) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(rs.Chains)) {
		fmt.Fprintf(&b, "chain %s {\n", name)
		for _, r := range rs.Chains[name].Rules() {
			fmt.Fprintf(&b, "\t%s\n", r)
		}
		b.WriteString("}\n")
	}
	writeElems(&b, "service-ips", rs.ServiceIPs, func(v string) string { return " : goto " + v })
	writeElems(&b, "service-nodeports", rs.NodePorts, func(v string) string { return " : goto " + v })
	writeElems(&b, "reject-ips", rs.RejectIPs, func(struct{}) string { return "" })
	writeElems(&b, "reject-nodeports", rs.RejectNodePorts, func(struct{}) string { return "" })
	writeElems(&b, "hairpin", rs.Hairpin, func(struct{}) string { return "" })
	return b.String()
}

func writeElems[K interface {
	comparable
	fmt.Stringer
}, V any](b *strings.Builder, set string, m map[K]V, val func(V) string) {
	if len(m) == 0 {
		return
	}
	lines := make([]string, 0, len(m))
	for k, v := range m {
		key := k.String()
		if a, ok := any(k).(netip.Addr); ok {
			key = a.String() + " . " + a.String()
		}
		lines = append(lines, "\t"+key+val(v)+"\n")
	}
	slices.Sort(lines)
	fmt.Fprintf(b, "%s {\n%s}\n", set, strings.Join(lines, ""))
}

// Merge adds other's objects to rs. An element whose key rs already holds
// is left to its first holder and reported (two Services claiming one
// ClusterIP:port or nodePort, which the apiserver's allocator prevents).
func (rs *Ruleset) Merge(other *Ruleset) (conflicts []string) {
	for k, v := range other.Chains {
		rs.Chains[k] = v
	}
	conflicts = append(conflicts, mergeMap(rs.ServiceIPs, other.ServiceIPs, rs.RejectIPs)...)
	conflicts = append(conflicts, mergeMap(rs.RejectIPs, other.RejectIPs, rs.ServiceIPs)...)
	conflicts = append(conflicts, mergeMap(rs.NodePorts, other.NodePorts, rs.RejectNodePorts)...)
	conflicts = append(conflicts, mergeMap(rs.RejectNodePorts, other.RejectNodePorts, rs.NodePorts)...)
	for k := range other.Hairpin {
		rs.Hairpin[k] = struct{}{}
	}
	return conflicts
}

func mergeMap[K comparable, V, W any](dst, src map[K]V, other map[K]W) []string {
	var conflicts []string
	for k, v := range src {
		_, inDst := dst[k]
		_, inOther := other[k]
		if inDst || inOther {
			conflicts = append(conflicts, fmt.Sprint(k))
			continue
		}
		dst[k] = v
	}
	return conflicts
}
