// Package nftables is the proxy's Service datapath: it programs ClusterIP
// and NodePort load balancing into the kernel with nftables, over netlink
// (github.com/google/nftables; no nft binary), in a table of its own
// ("ip tugboat" by default) that it alone owns.
//
// # Model
//
// The datapath is a pure function of the Services and Endpoints it is shown:
// ServicePorts turns one Service and its Endpoints into ServicePorts, Build
// turns ServicePorts into a Ruleset (the chains, map elements and set
// elements the table must hold), and Diff says what changed between two
// Rulesets. Only the netlink layer (table.go) and the loop (datapath.go)
// touch the kernel.
//
// # The table
//
//	table ip tugboat {
//	  map service-ips        { ipv4_addr . inet_proto . inet_service : verdict }  ClusterIP:port -> goto svc-...
//	  map service-nodeports  { inet_proto . inet_service : verdict }              nodePort -> goto svc-...
//	  set reject-ips         { ipv4_addr . inet_proto . inet_service }            Services with no ready endpoint
//	  set reject-nodeports   { inet_proto . inet_service }
//	  set hairpin            { ipv4_addr . ipv4_addr }                            endpoint . endpoint
//	  chain filter-prerouting { type filter hook prerouting priority dstnat - 10; ct state new jump reject-check }
//	  chain filter-output     { type filter hook output priority dstnat - 10; ct state new jump reject-check }
//	  chain reject-check      { ip daddr . meta l4proto . th dport @reject-ips goto reject; fib daddr type local ... @reject-nodeports goto reject }
//	  chain reject            { meta l4proto tcp reject with tcp reset; reject }
//	  chain nat-prerouting    { type nat hook prerouting priority dstnat; jump services }
//	  chain nat-output        { type nat hook output priority dstnat; jump services }
//	  chain services          { ip daddr . meta l4proto . th dport vmap @service-ips; fib daddr type local ... vmap @service-nodeports }
//	  chain nat-postrouting   { type nat hook postrouting priority srcnat; hairpin and marked packets: masquerade }
//	  chain svc-<ns>/<name>/<proto>/<port> {
//	    ip saddr != <cluster CIDR> meta mark set meta mark | 0x4000
//	    meta l4proto tcp dnat ip to numgen random mod N map { 0 : 10.244.1.5 . 8080, ... }
//	  }
//	  chain external-<ns>/<name>/<proto>/<port> {        externalTrafficPolicy Local: nodePort, LB addresses
//	    ip saddr <cluster CIDR> goto svc-<ns>/<name>/<proto>/<port>
//	    fib saddr type local goto svc-<ns>/<name>/<proto>/<port>
//	    meta l4proto tcp dnat to 10.244.1.5:8080         the node's own endpoints, unmarked (none: drop)
//	  }
//	}
//
// An endpoint is chosen with equal probability by numgen random mod N
// mapped straight to the endpoint's address and port: one rule per
// service port instead of a chain per endpoint, so an endpoint change
// rewrites one chain in a handful of netlink messages. Traffic whose reply
// would bypass the node is masqueraded: packets from outside the cluster
// CIDR (other hosts through a NodePort, the node itself) are marked in the
// service chain and masqueraded in postrouting; a pod that reaches itself
// through its Service (hairpin) is matched after DNAT by the hairpin set
// (saddr . daddr of every endpoint). Same-node pod-to-service-to-pod
// traffic relies on br_netfilter, as kube-proxy does (the datapath turns
// net.bridge.bridge-nf-call-iptables on in its namespace).
//
// # Traffic policy
//
// externalTrafficPolicy Local (NodePort and LoadBalancer Services) is
// kube-proxy's: the nodePort and load-balancer addresses lead to an
// external chain, where traffic from outside the cluster goes only to the
// endpoints whose nodeName is the proxy's node (Config.NodeName), not
// marked, so the endpoint sees the client's address; with no such endpoint
// it is dropped (not rejected: a load balancer's health check, served by
// the proxy on healthCheckNodePort, steers clients to other nodes). Pods
// (source in the cluster CIDR) and the node itself are sent on to the
// service chain, cluster-wide, as kube-proxy's "short-circuit" does: the
// policy is about external clients. The ClusterIP is not affected.
//
// internalTrafficPolicy Local narrows the service chain itself to the
// node's endpoints (a chain ending in drop when the node has none but
// other nodes do; none anywhere is still a reject): the ClusterIP, and
// the external traffic that takes the cluster-wide path, as kube-proxy
// does.
//
// # Updates
//
// The table is rebuilt whole at start (and after any failed update): one
// netlink batch that adds, deletes and re-creates the table with all its
// content, which the kernel applies as one transaction, so no stale rule
// from an earlier run survives and no packet sees a half-built table.
// After that, changes are incremental: the Services that changed since the
// last sync are rebuilt (their chains flushed and refilled, their map
// elements swapped) in one batch, again one transaction.
package nftables

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Protocol is an IP protocol number the datapath balances.
type Protocol uint8

// Protocols.
const (
	TCP Protocol = 6
	UDP Protocol = 17
)

func (p Protocol) String() string {
	switch p {
	case TCP:
		return "tcp"
	case UDP:
		return "udp"
	}
	return strconv.Itoa(int(p))
}

// ParseProtocol maps a Service's protocol ("" means TCP).
func ParseProtocol(s string) (Protocol, error) {
	switch strings.ToUpper(s) {
	case "", "TCP":
		return TCP, nil
	case "UDP":
		return UDP, nil
	}
	return 0, fmt.Errorf("protocol %q: want TCP or UDP", s)
}

// Endpoint is one ready backend of a service port.
type Endpoint struct {
	IP   netip.Addr
	Port uint16
}

func (e Endpoint) String() string { return netip.AddrPortFrom(e.IP, e.Port).String() }

func compareEndpoints(a, b Endpoint) int {
	if c := a.IP.Compare(b.IP); c != 0 {
		return c
	}
	return int(a.Port) - int(b.Port)
}

// ServicePort is one port of one Service as the datapath sees it.
type ServicePort struct {
	// Service is the Service's key, "namespace/name".
	Service string
	// Name is the port's name ("" for a Service's only port).
	Name      string
	Protocol  Protocol
	ClusterIP netip.Addr
	Port      uint16
	// NodePort is 0 unless the Service is of type NodePort.
	NodePort uint16
	// LoadBalancerIPs are a LoadBalancer Service's status.loadBalancer
	// ingress addresses: reached like the ClusterIP, on every node.
	LoadBalancerIPs []netip.Addr
	// Endpoints are the ready endpoints, sorted, without duplicates.
	Endpoints []Endpoint
	// ExternalLocal is externalTrafficPolicy Local on a NodePort or
	// LoadBalancer Service: traffic from outside the cluster to the
	// nodePort or a load-balancer address goes only to LocalEndpoints,
	// with its source address kept.
	ExternalLocal bool
	// InternalLocal is internalTrafficPolicy Local: traffic to the
	// ClusterIP goes only to LocalEndpoints (and so does external traffic
	// that takes the cluster-wide path), as kube-proxy does.
	InternalLocal bool
	// LocalEndpoints are the endpoints on the proxy's node (the slices'
	// nodeName), chosen as Endpoints are; set only for ExternalLocal and
	// InternalLocal.
	LocalEndpoints []Endpoint
}

// ChainName is the name of the port's service chain:
// "svc-<namespace>/<name>/<proto>/<port>".
func (sp ServicePort) ChainName() string {
	return fmt.Sprintf("svc-%s/%s/%d", sp.Service, sp.Protocol, sp.Port)
}

// ExternalChainName is the name of the port's external chain (Services
// with externalTrafficPolicy Local): "external-<namespace>/<name>/<proto>/<port>".
func (sp ServicePort) ExternalChainName() string {
	return fmt.Sprintf("external-%s/%s/%d", sp.Service, sp.Protocol, sp.Port)
}

// ServicePorts is the datapath's view of svc and its EndpointSlices
// (none: no endpoints): one ServicePort per port, each with the endpoints
// of the slice ports of the same name and protocol (ReadyEndpoints). A
// headless Service (no ClusterIP) has none. With externalTrafficPolicy
// Local on a NodePort or LoadBalancer Service, each port also has the
// endpoints of the slices' endpoints whose nodeName is node (the proxy's
// node). Malformed fields (which validation refuses) are reported, naming
// the field.
func ServicePorts(svc *v1.Service, eps []*v1.EndpointSlice, node string) ([]ServicePort, error) {
	spec := svc.GetSpec()
	ipStr := spec.GetClusterIp()
	if ipStr == "" || ipStr == "None" {
		return nil, nil
	}
	key := v1.Key(svc)
	ip, err := netip.ParseAddr(ipStr)
	if err != nil || !ip.Is4() {
		return nil, fmt.Errorf("service %s: spec.clusterIP %q: not an IPv4 address", key, ipStr)
	}
	nodePorts := spec.GetType() == "NodePort" || spec.GetType() == "LoadBalancer"
	var lbIPs []netip.Addr
	if spec.GetType() == "LoadBalancer" {
		for _, in := range svc.GetStatus().GetLoadBalancer().GetIngress() {
			if a, err := netip.ParseAddr(in.GetIp()); err == nil && a.Is4() && a != ip {
				lbIPs = append(lbIPs, a)
			}
		}
	}
	out := make([]ServicePort, 0, len(spec.GetPorts()))
	for i, p := range spec.GetPorts() {
		proto, err := ParseProtocol(p.GetProtocol())
		if err != nil {
			return nil, fmt.Errorf("service %s: spec.ports[%d].%v", key, i, err)
		}
		if p.GetPort() <= 0 || p.GetPort() > 65535 {
			return nil, fmt.Errorf("service %s: spec.ports[%d].port %d: out of range", key, i, p.GetPort())
		}
		sp := ServicePort{Service: key, Name: p.GetName(), Protocol: proto, ClusterIP: ip, Port: uint16(p.GetPort())}
		if nodePorts && p.GetNodePort() > 0 && p.GetNodePort() <= 65535 {
			sp.NodePort = uint16(p.GetNodePort())
		}
		sp.LoadBalancerIPs = lbIPs
		sp.Endpoints = ReadyEndpoints(eps, sp.Name, proto)
		sp.ExternalLocal = nodePorts && spec.GetExternalTrafficPolicy() == "Local"
		sp.InternalLocal = spec.GetInternalTrafficPolicy() == "Local"
		if sp.ExternalLocal || sp.InternalLocal {
			sp.LocalEndpoints = LocalEndpoints(eps, sp.Name, proto, node)
		}
		out = append(out, sp)
	}
	return out, nil
}

// ReadyEndpoints is where new connections to the slice ports named name
// with protocol proto go, sorted and without duplicates: the ready
// endpoints (a condition left unset counts as ready, as Kubernetes reads
// it); if there is none, the serving terminating ones, as kube-proxy does,
// so a Service whose pods are all shutting down still answers while they
// drain. Connections already established keep their endpoint whatever
// happens here: conntrack holds their translation, and only new
// connections go through the service chain.
func ReadyEndpoints(eps []*v1.EndpointSlice, name string, proto Protocol) []Endpoint {
	return usableEndpoints(eps, name, proto, "")
}

// LocalEndpoints is ReadyEndpoints restricted to the endpoints whose
// nodeName is node: the ready ones there, else the serving terminating
// ones there (kube-proxy's choice for traffic policy Local).
func LocalEndpoints(eps []*v1.EndpointSlice, name string, proto Protocol, node string) []Endpoint {
	if node == "" {
		return nil
	}
	return usableEndpoints(eps, name, proto, node)
}

// usableEndpoints is ReadyEndpoints of the endpoints on node ("": all).
func usableEndpoints(eps []*v1.EndpointSlice, name string, proto Protocol, node string) []Endpoint {
	var ready, draining []Endpoint
	for _, s := range eps {
		if s.GetAddressType() != "IPv4" {
			continue
		}
		for _, p := range s.GetPorts() {
			pProto, err := ParseProtocol(p.GetProtocol())
			if err != nil || pProto != proto || p.GetName() != name || p.GetPort() <= 0 || p.GetPort() > 65535 {
				continue
			}
			for _, e := range s.GetEndpoints() {
				if node != "" && e.GetNodeName() != node {
					continue
				}
				c := e.GetConditions()
				isReady := c == nil || c.Ready == nil || c.GetReady()
				if !isReady && !(c.GetServing() && c.GetTerminating()) {
					continue
				}
				for _, a := range e.GetAddresses() {
					ip, err := netip.ParseAddr(a)
					if err != nil || !ip.Is4() {
						continue
					}
					ep := Endpoint{IP: ip, Port: uint16(p.GetPort())}
					if isReady {
						ready = append(ready, ep)
					} else {
						draining = append(draining, ep)
					}
				}
			}
		}
	}
	out := ready
	if len(out) == 0 {
		out = draining
	}
	slices.SortFunc(out, compareEndpoints)
	return slices.Compact(out)
}
