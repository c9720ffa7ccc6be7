// Package netpolicy is NetworkPolicy's meaning, apart from any datapath:
// which pods a policy selects, which peers and ports its rules allow, and
// the verdict for one connection. The node's policy agent (proxy/netpol)
// compiles it into nftables; `tugctl trace service --from` evaluates it to
// say which policy would drop a connection. Both read the same code, so
// what trace says is what the node enforces.
//
// Semantics are Kubernetes' (networking.k8s.io/v1): a pod is isolated for
// a direction when some policy of that type selects it; then a connection
// passes if any rule of any such policy allows it; rules only allow.
// Ingress and egress are separate: a connection between two pods needs the
// sender's egress and the receiver's ingress.
package netpolicy

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Protocols a port names.
const (
	TCP  = "TCP"
	UDP  = "UDP"
	SCTP = "SCTP"
)

// Policy is a NetworkPolicy with its selectors parsed.
type Policy struct {
	Namespace, Name string
	Selector        labels.Selector
	// Ingress and Egress: the policy's types (it isolates the pods it
	// selects for those directions).
	Ingress, Egress bool
	IngressRules    []Rule
	EgressRules     []Rule
}

// Key is "namespace/name".
func (p *Policy) Key() string { return p.Namespace + "/" + p.Name }

// Rule is one ingress or egress rule: traffic to or from any of Peers
// (none: any peer) on any of Ports (none: any port).
type Rule struct {
	Peers []Peer
	Ports []Port
}

// Peer is pods (Pods and/or Namespaces set) or an address block.
type Peer struct {
	// Pods selects pods; nil: any pod (of the namespaces Namespaces
	// selects, or the policy's own namespace).
	Pods labels.Selector
	// Namespaces selects namespaces; nil with Pods set: the policy's own.
	Namespaces labels.Selector
	// HasPods and HasNamespaces say which of the two were given.
	HasPods, HasNamespaces bool
	// Block, if set, makes this an ipBlock peer.
	Block *Block
}

// Block is an ipBlock: CIDR less Except.
type Block struct {
	CIDR   netip.Prefix
	Except []netip.Prefix
}

// Contains reports whether ip is in the block.
func (b *Block) Contains(ip netip.Addr) bool {
	if !b.CIDR.Contains(ip) {
		return false
	}
	for _, e := range b.Except {
		if e.Contains(ip) {
			return false
		}
	}
	return true
}

// Port is one allowed port: Protocol, and Port..End (0: every port), or
// a container port's Name.
type Port struct {
	Protocol  string
	Port, End uint16
	Name      string
}

// Compile parses a stored (defaulted, validated) policy.
func Compile(np *v1.NetworkPolicy) (*Policy, error) {
	s := np.GetSpec()
	sel, err := labels.FromLabelSelector(orEmpty(s.GetPodSelector()))
	if err != nil {
		return nil, fmt.Errorf("spec.podSelector: %w", err)
	}
	p := &Policy{Namespace: np.GetMetadata().GetNamespace(), Name: np.GetMetadata().GetName(), Selector: sel}
	for _, t := range s.GetPolicyTypes() {
		p.Ingress = p.Ingress || t == "Ingress"
		p.Egress = p.Egress || t == "Egress"
	}
	if len(s.GetPolicyTypes()) == 0 { // not defaulted (a test's literal)
		p.Ingress, p.Egress = true, len(s.GetEgress()) > 0
	}
	for i, r := range s.GetIngress() {
		rule, err := compileRule(r.GetFrom(), r.GetPorts())
		if err != nil {
			return nil, fmt.Errorf("spec.ingress[%d]: %w", i, err)
		}
		p.IngressRules = append(p.IngressRules, rule)
	}
	for i, r := range s.GetEgress() {
		rule, err := compileRule(r.GetTo(), r.GetPorts())
		if err != nil {
			return nil, fmt.Errorf("spec.egress[%d]: %w", i, err)
		}
		p.EgressRules = append(p.EgressRules, rule)
	}
	return p, nil
}

func orEmpty(s *v1.LabelSelector) *v1.LabelSelector {
	if s == nil {
		return &v1.LabelSelector{}
	}
	return s
}

func compileRule(peers []*v1.NetworkPolicyPeer, ports []*v1.NetworkPolicyPort) (Rule, error) {
	var r Rule
	for i, peer := range peers {
		var out Peer
		if b := peer.GetIpBlock(); b != nil {
			cidr, err := netip.ParsePrefix(b.GetCidr())
			if err != nil {
				return r, fmt.Errorf("peer %d: ipBlock.cidr: %w", i, err)
			}
			out.Block = &Block{CIDR: cidr.Masked()}
			for _, e := range b.GetExcept() {
				ex, err := netip.ParsePrefix(e)
				if err != nil {
					return r, fmt.Errorf("peer %d: ipBlock.except: %w", i, err)
				}
				out.Block.Except = append(out.Block.Except, ex.Masked())
			}
		} else {
			if ps := peer.GetPodSelector(); ps != nil {
				sel, err := labels.FromLabelSelector(ps)
				if err != nil {
					return r, fmt.Errorf("peer %d: podSelector: %w", i, err)
				}
				out.Pods, out.HasPods = sel, true
			}
			if ns := peer.GetNamespaceSelector(); ns != nil {
				sel, err := labels.FromLabelSelector(ns)
				if err != nil {
					return r, fmt.Errorf("peer %d: namespaceSelector: %w", i, err)
				}
				out.Namespaces, out.HasNamespaces = sel, true
			}
		}
		r.Peers = append(r.Peers, out)
	}
	for i, port := range ports {
		out := Port{Protocol: port.GetProtocol()}
		if out.Protocol == "" {
			out.Protocol = TCP
		}
		if port.Port != nil {
			if n, err := strconv.Atoi(port.GetPort()); err == nil {
				if n < 1 || n > 65535 {
					return r, fmt.Errorf("ports[%d].port: %d out of range", i, n)
				}
				out.Port, out.End = uint16(n), uint16(n)
				if port.EndPort != nil {
					if e := port.GetEndPort(); e >= int32(n) && e <= 65535 {
						out.End = uint16(e)
					}
				}
			} else {
				out.Name = port.GetPort()
			}
		}
		r.Ports = append(r.Ports, out)
	}
	return r, nil
}

// Endpoint is a pod as policies see it: where it is, its labels and
// addresses, its named ports.
type Endpoint struct {
	Namespace, Name string
	Labels          map[string]string
	IP              netip.Addr
	NodeName        string
	// NamedPorts maps a container port's name to its protocol and number.
	NamedPorts map[string]NamedPort
}

// NamedPort is a container port's protocol and number.
type NamedPort struct {
	Protocol string
	Port     uint16
}

// EndpointOf is a pod as an endpoint; ok is false for a pod policies do
// not apply to (no IP yet, host network, finished).
func EndpointOf(p *v1.Pod) (Endpoint, bool) {
	st := p.GetStatus()
	if p.GetSpec().GetHostNetwork() || st.GetPhase() == "Succeeded" || st.GetPhase() == "Failed" {
		return Endpoint{}, false
	}
	ip, err := netip.ParseAddr(st.GetPodIp())
	if err != nil || !ip.Is4() {
		return Endpoint{}, false
	}
	e := Endpoint{Namespace: p.GetMetadata().GetNamespace(), Name: p.GetMetadata().GetName(), Labels: p.GetMetadata().GetLabels(),
		IP: ip, NodeName: p.GetSpec().GetNodeName()}
	for _, c := range p.GetSpec().GetContainers() {
		for _, cp := range c.GetPorts() {
			if cp.GetName() == "" || cp.GetContainerPort() < 1 || cp.GetContainerPort() > 65535 {
				continue
			}
			if e.NamedPorts == nil {
				e.NamedPorts = map[string]NamedPort{}
			}
			e.NamedPorts[cp.GetName()] = NamedPort{Protocol: cmpOr(cp.GetProtocol(), TCP), Port: uint16(cp.GetContainerPort())}
		}
	}
	return e, true
}

// ClusterDNS is the cluster DNS (served by each node's proxy, not by a
// pod) as policies see it: a pod kube-system/kube-dns with label
// k8s-app=kube-dns and named ports dns (UDP 53) and dns-tcp (TCP 53), as
// CoreDNS's pods are, so the usual "allow DNS" egress rules work.
func ClusterDNS(ip netip.Addr) Endpoint {
	return Endpoint{Namespace: "kube-system", Name: "kube-dns", Labels: map[string]string{"k8s-app": "kube-dns"}, IP: ip,
		NamedPorts: map[string]NamedPort{"dns": {Protocol: UDP, Port: 53}, "dns-tcp": {Protocol: TCP, Port: 53}}}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Namespaces gives a namespace's labels (nil for one it does not know).
type Namespaces func(name string) map[string]string

// NamespaceLabels is a namespace's labels as selectors see them: its own
// plus kubernetes.io/metadata.name, which Kubernetes always sets.
func NamespaceLabels(name string, own map[string]string) map[string]string {
	out := make(map[string]string, len(own)+1)
	for k, v := range own {
		out[k] = v
	}
	out["kubernetes.io/metadata.name"] = name
	return out
}

// Selects reports whether the policy applies to e.
func (p *Policy) Selects(e *Endpoint) bool {
	return e.Namespace == p.Namespace && p.Selector.Matches(e.Labels)
}

// MatchesPod reports whether a pods peer of a policy in namespace ns
// matches e. Block peers never match pods by their labels.
func (peer *Peer) MatchesPod(ns string, e *Endpoint, nsLabels Namespaces) bool {
	if peer.Block != nil {
		return false
	}
	if peer.HasNamespaces {
		if !peer.Namespaces.Matches(NamespaceLabels(e.Namespace, nsLabels(e.Namespace))) {
			return false
		}
	} else if e.Namespace != ns {
		return false
	}
	return !peer.HasPods || peer.Pods.Matches(e.Labels)
}

// Matches reports whether the port allows protocol/port to the endpoint
// dst (whose named ports a named Port refers to; nil for an address that
// is no pod).
func (pt *Port) Matches(protocol string, port uint16, dst *Endpoint) bool {
	if pt.Name != "" {
		if dst == nil {
			return false
		}
		np, ok := dst.NamedPorts[pt.Name]
		return ok && np.Protocol == protocol && np.Port == port && pt.Protocol == protocol
	}
	if pt.Protocol != protocol {
		return false
	}
	return pt.Port == 0 || (port >= pt.Port && port <= pt.End)
}

// Connection is one new connection to judge.
type Connection struct {
	// From and To are the two ends; a nil end is an address that is no
	// pod (FromIP/ToIP then say which).
	From, To     *Endpoint
	FromIP, ToIP netip.Addr
	Protocol     string
	Port         uint16
}

// Verdict says whether a connection passes and why.
type Verdict struct {
	Allowed bool
	// EgressIsolating and IngressIsolating are the policies that isolate
	// the sender for egress and the receiver for ingress.
	EgressIsolating, IngressIsolating []string
	// EgressAllowedBy and IngressAllowedBy name the policy whose rule
	// allowed that direction ("" when the end is not isolated).
	EgressAllowedBy, IngressAllowedBy string
	// DroppedBy is "egress" or "ingress" when the connection is dropped.
	DroppedBy string
}

// Evaluate judges c against policies.
func Evaluate(policies []*Policy, nsLabels Namespaces, c Connection) Verdict {
	v := Verdict{Allowed: true}
	slices.SortFunc(policies, func(a, b *Policy) int { return compareKey(a, b) })
	if c.From != nil {
		allowed := false
		for _, p := range policies {
			if !p.Egress || !p.Selects(c.From) {
				continue
			}
			v.EgressIsolating = append(v.EgressIsolating, p.Key())
			if !allowed && rulesAllow(p.EgressRules, p.Namespace, c.To, c.ToIP, c, nsLabels) {
				allowed, v.EgressAllowedBy = true, p.Key()
			}
		}
		if len(v.EgressIsolating) > 0 && !allowed {
			v.Allowed, v.DroppedBy = false, "egress"
			return v
		}
	}
	if c.To != nil {
		allowed := false
		for _, p := range policies {
			if !p.Ingress || !p.Selects(c.To) {
				continue
			}
			v.IngressIsolating = append(v.IngressIsolating, p.Key())
			if !allowed && rulesAllow(p.IngressRules, p.Namespace, c.From, c.FromIP, c, nsLabels) {
				allowed, v.IngressAllowedBy = true, p.Key()
			}
		}
		if len(v.IngressIsolating) > 0 && !allowed {
			v.Allowed, v.DroppedBy = false, "ingress"
		}
	}
	return v
}

func compareKey(a, b *Policy) int {
	if a.Namespace != b.Namespace {
		if a.Namespace < b.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// rulesAllow: does any rule allow the peer (pod or address) on c's port?
func rulesAllow(rules []Rule, ns string, peer *Endpoint, peerIP netip.Addr, c Connection, nsLabels Namespaces) bool {
	for _, r := range rules {
		if !peersMatch(r.Peers, ns, peer, peerIP, nsLabels) {
			continue
		}
		if len(r.Ports) == 0 {
			return true
		}
		for _, pt := range r.Ports {
			if pt.Matches(c.Protocol, c.Port, c.To) {
				return true
			}
		}
	}
	return false
}

func peersMatch(peers []Peer, ns string, peer *Endpoint, peerIP netip.Addr, nsLabels Namespaces) bool {
	if len(peers) == 0 {
		return true
	}
	ip := peerIP
	if peer != nil {
		ip = peer.IP
	}
	for i := range peers {
		p := &peers[i]
		if p.Block != nil {
			if ip.IsValid() && p.Block.Contains(ip) {
				return true
			}
			continue
		}
		if peer != nil && p.MatchesPod(ns, peer, nsLabels) {
			return true
		}
	}
	return false
}
