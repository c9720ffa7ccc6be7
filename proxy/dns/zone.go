// Package dns is the cluster DNS server every proxy runs for the pods of
// its node (github.com/miekg/dns): it answers names in the cluster domain
// from the Services it is shown and forwards every other name to the
// node's upstream resolvers.
//
// Names (domain cluster.local):
//
//	<svc>.<ns>.svc.cluster.local            A     the ClusterIP; a headless Service's published endpoints
//	                                              (ready ones, or all with publishNotReadyAddresses)
//	<svc>.<ns>.svc.cluster.local            CNAME an ExternalName Service's external name (A/AAAA asked:
//	                                              the target's records follow, resolved in the zone or upstream)
//	<svc>.<ns>.svc.cluster.local            SRV   one record per named port, target <svc>.<ns>.svc.cluster.local;
//	                                              headless: one per endpoint and port, target the endpoint's name
//	<ep>.<svc>.<ns>.svc.cluster.local       A     one endpoint of a headless Service: <ep> is the pod's hostname
//	                                              when its subdomain is the Service (web-0.web.ns.svc: StatefulSets),
//	                                              else its address with dashes (10-244-1-5)
//	_<port>._<proto>.<svc>.<ns>.svc.cluster.local  SRV  the named port
//	anything else under cluster.local       NXDOMAIN (NOERROR with no answer for names that exist with
//	                                        another type, and for <ns>.svc.cluster.local of a namespace with Services)
//	everything else                         forwarded to the upstreams in order; SERVFAIL once they all
//	                                        failed or the forwarding budget is spent, never silence
//
// Loop: the proxy feeds the Zone from its informers (SetService,
// DeleteService, SetEndpoints, DeleteEndpoints); the Server answers from
// the Zone under a read lock. Answers carry a TTL of 5 s and negative
// answers the zone's SOA (negative TTL 5 s), as CoreDNS does.
package dns

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"sync"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// servicePort is a named port as SRV records show it.
type servicePort struct {
	name  string // port name, lower case
	proto string // "tcp" or "udp"
	port  uint16
}

// Endpoint is one address a Service publishes in DNS.
type Endpoint struct {
	IP netip.Addr
	// Hostname names the endpoint under the Service
	// (<hostname>.<svc>.<ns>.svc): a pod's spec.hostname when its
	// spec.subdomain is the Service's name. Empty: the dashed address
	// (10-244-1-5.<svc>.<ns>.svc).
	Hostname string
	// Ports are the endpoint's named ports (SRV records of headless
	// Services point at them).
	Ports []EndpointPort
}

// EndpointPort is one named port of an endpoint.
type EndpointPort struct {
	Name, Protocol string
	Port           uint16
}

// label is the endpoint's name under its Service.
func (e Endpoint) label() string {
	if e.Hostname != "" {
		return strings.ToLower(e.Hostname)
	}
	return strings.ReplaceAll(e.IP.String(), ".", "-")
}

// service is what the zone knows of one Service.
type service struct {
	clusterIP netip.Addr // invalid: headless (or ExternalName)
	headless  bool
	external  string // ExternalName: the CNAME target, fully qualified
	ports     []servicePort
	endpoints []Endpoint // published addresses (used for headless Services)
}

// Zone holds the cluster domain's records. It is safe for concurrent use.
type Zone struct {
	domain string // "cluster.local." (lower case, fully qualified)

	mu       sync.RWMutex
	services map[string]map[string]*service // namespace -> name -> service
	eps      map[string][]Endpoint          // "ns/name" -> published endpoints
}

// NewZone makes an empty zone for domain ("cluster.local").
func NewZone(domain string) *Zone {
	return &Zone{domain: fqdn(domain), services: map[string]map[string]*service{}, eps: map[string][]Endpoint{}}
}

// Domain is the zone's fully qualified domain ("cluster.local.").
func (z *Zone) Domain() string { return z.domain }

func fqdn(s string) string {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	return s + "."
}

// SetService adds or replaces a Service's records.
func (z *Zone) SetService(svc *v1.Service) {
	m := svc.GetMetadata()
	s := &service{}
	spec := svc.GetSpec()
	switch {
	case spec.GetType() == "ExternalName":
		s.external = fqdn(spec.GetExternalName())
	case spec.GetClusterIp() == "None":
		s.headless = true
	default:
		if ip, err := netip.ParseAddr(spec.GetClusterIp()); err == nil && ip.Is4() {
			s.clusterIP = ip
		}
	}
	for _, p := range spec.GetPorts() {
		if p.GetName() == "" || p.GetPort() <= 0 || p.GetPort() > 65535 {
			continue
		}
		s.ports = append(s.ports, servicePort{name: strings.ToLower(p.GetName()), proto: protoLabel(p.GetProtocol()), port: uint16(p.GetPort())})
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	s.endpoints = z.eps[m.GetNamespace()+"/"+m.GetName()]
	ns := z.services[m.GetNamespace()]
	if ns == nil {
		ns = map[string]*service{}
		z.services[m.GetNamespace()] = ns
	}
	ns[strings.ToLower(m.GetName())] = s
}

func protoLabel(p string) string { return strings.ToLower(cmp.Or(p, "TCP")) }

// DeleteService removes the Service "ns/name".
func (z *Zone) DeleteService(namespace, name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if ns := z.services[namespace]; ns != nil {
		delete(ns, strings.ToLower(name))
		if len(ns) == 0 {
			delete(z.services, namespace)
		}
	}
}

// SetEndpoints records the addresses a Service publishes (its ready
// endpoints, or all of them with publishNotReadyAddresses): what a
// headless Service's names answer. IPv4 only; sorted by address.
func (z *Zone) SetEndpoints(namespace, name string, eps []Endpoint) {
	eps = slices.DeleteFunc(slices.Clone(eps), func(e Endpoint) bool { return !e.IP.Is4() })
	slices.SortFunc(eps, func(a, b Endpoint) int { return a.IP.Compare(b.IP) })
	eps = slices.CompactFunc(eps, func(a, b Endpoint) bool { return a.IP == b.IP })
	z.mu.Lock()
	defer z.mu.Unlock()
	z.eps[namespace+"/"+name] = eps
	if s := z.services[namespace][strings.ToLower(name)]; s != nil {
		s.endpoints = eps
	}
}

// DeleteEndpoints forgets a Service's addresses.
func (z *Zone) DeleteEndpoints(namespace, name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.eps, namespace+"/"+name)
	if s := z.services[namespace][strings.ToLower(name)]; s != nil {
		s.endpoints = nil
	}
}

// answerKind says how a name resolved.
type answerKind int

const (
	outside  answerKind = iota // not in the zone: forward
	nxdomain                   // in the zone, no such name
	exists                     // the name exists (records may or may not be of the asked type)
)

// result is a lookup's outcome: the name's A addresses, SRV records or
// CNAME target.
type result struct {
	kind  answerKind
	a     []netip.Addr
	srv   []srvRecord
	cname string // ExternalName: the target, fully qualified
}

// srvRecord is one SRV answer: a port on a target name (whose A records
// go in the additional section).
type srvRecord struct {
	port   uint16
	target string
	a      []netip.Addr
}

// lookup resolves a lower-case fully qualified name:
//
//	<svc>.<ns>.svc                     A (ClusterIP, or a headless Service's endpoints), SRV, or CNAME
//	<endpoint>.<svc>.<ns>.svc          A of one endpoint of a headless Service (hostname or dashed address)
//	_<port>._<proto>.<svc>.<ns>.svc    SRV of a named port (a headless Service's: one per endpoint)
//	_<proto>.<svc>.<ns>.svc            an empty non-terminal when the Service has such ports
func (z *Zone) lookup(name string) result {
	if name == z.domain {
		return result{kind: exists}
	}
	rest, ok := strings.CutSuffix(name, "."+z.domain)
	if !ok {
		return result{kind: outside}
	}
	labels := strings.Split(rest, ".")
	n := len(labels)
	if labels[n-1] != "svc" {
		return result{kind: nxdomain}
	}
	z.mu.RLock()
	defer z.mu.RUnlock()
	switch n {
	case 1: // svc.cluster.local
		return result{kind: exists}
	case 2: // <ns>.svc.cluster.local
		if len(z.services[labels[0]]) > 0 {
			return result{kind: exists}
		}
		return result{kind: nxdomain}
	}
	svcName, ns := labels[n-3], labels[n-2]
	s := z.services[ns][svcName]
	if s == nil {
		return result{kind: nxdomain}
	}
	base := svcName + "." + ns + ".svc." + z.domain
	switch n {
	case 3: // <svc>.<ns>.svc
		r := result{kind: exists, cname: s.external}
		switch {
		case s.clusterIP.IsValid():
			r.a = []netip.Addr{s.clusterIP}
		case s.headless:
			for _, e := range s.endpoints {
				r.a = append(r.a, e.IP)
			}
		}
		for _, p := range s.ports {
			r.srv = append(r.srv, s.srvFor(p, base)...)
		}
		return r
	case 4:
		first := labels[0]
		if proto, ok := strings.CutPrefix(first, "_"); ok {
			// _<proto>.<svc>.<ns>.svc: an empty non-terminal if the Service has such ports.
			if slices.ContainsFunc(s.ports, func(p servicePort) bool { return p.proto == proto }) {
				return result{kind: exists}
			}
			return result{kind: nxdomain}
		}
		if s.headless {
			for _, e := range s.endpoints {
				if e.label() == first {
					return result{kind: exists, a: []netip.Addr{e.IP}}
				}
			}
		}
	case 5: // _<port>._<proto>.<svc>.<ns>.svc
		port, ok1 := strings.CutPrefix(labels[0], "_")
		proto, ok2 := strings.CutPrefix(labels[1], "_")
		if ok1 && ok2 {
			for _, p := range s.ports {
				if p.name == port && p.proto == proto {
					return result{kind: exists, srv: s.srvFor(p, base)}
				}
			}
		}
	}
	return result{kind: nxdomain}
}

// srvFor is the SRV records of one named port: the Service's port on its
// own name, or, for a headless Service, each endpoint's port of that name
// on the endpoint's name.
func (s *service) srvFor(p servicePort, base string) []srvRecord {
	switch {
	case s.clusterIP.IsValid():
		return []srvRecord{{port: p.port, target: base, a: []netip.Addr{s.clusterIP}}}
	case !s.headless:
		return nil
	}
	var out []srvRecord
	for _, e := range s.endpoints {
		for _, ep := range e.Ports {
			if strings.EqualFold(ep.Name, p.name) && protoLabel(ep.Protocol) == p.proto {
				out = append(out, srvRecord{port: ep.Port, target: e.label() + "." + base, a: []netip.Addr{e.IP}})
			}
		}
	}
	return out
}
