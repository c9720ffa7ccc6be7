// Package dns is the cluster DNS server every proxy runs for the pods of
// its node (github.com/miekg/dns): it answers names in the cluster domain
// from the Services it is shown and forwards every other name to the
// node's upstream resolvers.
//
// Names (domain cluster.local):
//
//	<svc>.<ns>.svc.cluster.local            A     the ClusterIP (a headless Service: its ready endpoints)
//	<svc>.<ns>.svc.cluster.local            SRV   one record per named port, target <svc>.<ns>.svc.cluster.local
//	<host>.<svc>.<ns>.svc.cluster.local     A     a headless Service's ready endpoint whose hostname is <host>
//	                                        (a pod with spec.hostname and spec.subdomain = the Service: StatefulSet pods)
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

// service is what the zone knows of one Service.
type service struct {
	clusterIP netip.Addr // invalid: headless
	ports     []servicePort
	endpoints []netip.Addr            // ready addresses (used for headless Services)
	hosts     map[string][]netip.Addr // ready addresses by endpoint hostname (headless Services)
}

// Zone holds the cluster domain's records. It is safe for concurrent use.
type Zone struct {
	domain string // "cluster.local." (lower case, fully qualified)

	mu       sync.RWMutex
	services map[string]map[string]*service     // namespace -> name -> service
	eps      map[string][]netip.Addr            // "ns/name" -> ready addresses
	hosts    map[string]map[string][]netip.Addr // "ns/name" -> endpoint hostname -> addresses
}

// NewZone makes an empty zone for domain ("cluster.local").
func NewZone(domain string) *Zone {
	return &Zone{domain: fqdn(domain), services: map[string]map[string]*service{}, eps: map[string][]netip.Addr{},
		hosts: map[string]map[string][]netip.Addr{}}
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
	if ip, err := netip.ParseAddr(svc.GetSpec().GetClusterIp()); err == nil && ip.Is4() {
		s.clusterIP = ip
	}
	for _, p := range svc.GetSpec().GetPorts() {
		if p.GetName() == "" || p.GetPort() <= 0 || p.GetPort() > 65535 {
			continue
		}
		proto := strings.ToLower(p.GetProtocol())
		if proto == "" {
			proto = "tcp"
		}
		s.ports = append(s.ports, servicePort{name: strings.ToLower(p.GetName()), proto: proto, port: uint16(p.GetPort())})
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	s.endpoints = z.eps[m.GetNamespace()+"/"+m.GetName()]
	s.hosts = z.hosts[m.GetNamespace()+"/"+m.GetName()]
	ns := z.services[m.GetNamespace()]
	if ns == nil {
		ns = map[string]*service{}
		z.services[m.GetNamespace()] = ns
	}
	ns[strings.ToLower(m.GetName())] = s
}

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

// SetEndpoints records a Service's ready addresses (for headless Services).
func (z *Zone) SetEndpoints(e *v1.Endpoints) {
	var ips []netip.Addr
	hosts := map[string][]netip.Addr{}
	for _, ss := range e.GetSubsets() {
		for _, a := range ss.GetAddresses() {
			if ip, err := netip.ParseAddr(a.GetIp()); err == nil && ip.Is4() {
				ips = append(ips, ip)
				if h := strings.ToLower(a.GetHostname()); h != "" {
					hosts[h] = append(hosts[h], ip)
				}
			}
		}
	}
	slices.SortFunc(ips, netip.Addr.Compare)
	ips = slices.Compact(ips)
	m := e.GetMetadata()
	z.mu.Lock()
	defer z.mu.Unlock()
	z.eps[m.GetNamespace()+"/"+m.GetName()] = ips
	z.hosts[m.GetNamespace()+"/"+m.GetName()] = hosts
	if s := z.services[m.GetNamespace()][strings.ToLower(m.GetName())]; s != nil {
		s.endpoints, s.hosts = ips, hosts
	}
}

// DeleteEndpoints forgets a Service's ready addresses.
func (z *Zone) DeleteEndpoints(namespace, name string) {
	z.mu.Lock()
	defer z.mu.Unlock()
	delete(z.eps, namespace+"/"+name)
	delete(z.hosts, namespace+"/"+name)
	if s := z.services[namespace][strings.ToLower(name)]; s != nil {
		s.endpoints, s.hosts = nil, nil
	}
}

// answerKind says how a name resolved.
type answerKind int

const (
	outside  answerKind = iota // not in the zone: forward
	nxdomain                   // in the zone, no such name
	exists                     // the name exists (records may or may not be of the asked type)
)

// result is a lookup's outcome: A addresses and SRV records of the name.
type result struct {
	kind   answerKind
	a      []netip.Addr
	srv    []srvRecord
	target string // SRV target / the service's name
}

type srvRecord struct {
	port uint16
}

// lookup resolves a lower-case fully qualified name.
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
	target := svcName + "." + ns + ".svc." + z.domain
	switch n {
	case 3: // <svc>.<ns>.svc
		r := result{kind: exists, target: target}
		if s.clusterIP.IsValid() {
			r.a = []netip.Addr{s.clusterIP}
		} else {
			r.a = s.endpoints
		}
		for _, p := range s.ports {
			r.srv = append(r.srv, srvRecord{port: p.port})
		}
		return r
	case 4: // _<proto>.<svc>.<ns>.svc: an empty non-terminal if the Service has such ports
		proto, ok := strings.CutPrefix(labels[0], "_")
		if ok && slices.ContainsFunc(s.ports, func(p servicePort) bool { return p.proto == proto }) {
			return result{kind: exists}
		}
		// <host>.<svc>.<ns>.svc: a headless Service's endpoint by hostname.
		if ips := s.hosts[labels[0]]; !ok && !s.clusterIP.IsValid() && len(ips) > 0 {
			return result{kind: exists, a: ips, target: labels[0] + "." + target}
		}
	case 5: // _<port>._<proto>.<svc>.<ns>.svc
		port, ok1 := strings.CutPrefix(labels[0], "_")
		proto, ok2 := strings.CutPrefix(labels[1], "_")
		if ok1 && ok2 {
			for _, p := range s.ports {
				if p.name == port && p.proto == proto {
					return result{kind: exists, target: target, srv: []srvRecord{{port: p.port}}}
				}
			}
		}
	}
	return result{kind: nxdomain}
}
