package dns

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func svcObj(ns, name, ip string, ports ...*v1.ServicePort) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: ns, Name: name}, Spec: &v1.ServiceSpec{ClusterIp: ip, Ports: ports}}
}

func namedPort(name, proto string, port int32) *v1.ServicePort {
	return &v1.ServicePort{Name: name, Protocol: proto, Port: port}
}

func testZone() *Zone {
	z := NewZone("cluster.local")
	z.SetService(svcObj("default", "web", "10.96.0.20", namedPort("http", "TCP", 80), namedPort("metrics", "TCP", 9100)))
	z.SetService(svcObj("kube-system", "dns", "10.96.0.10", namedPort("dns", "UDP", 53), namedPort("dns-tcp", "TCP", 53)))
	z.SetService(svcObj("default", "Unnamed", "10.96.0.21", namedPort("", "TCP", 80)))
	pg := []EndpointPort{{Name: "pg", Protocol: "TCP", Port: 15432}}
	z.SetEndpoints("default", "db", []Endpoint{{IP: ip("10.244.2.3"), Hostname: "db-1", Ports: pg}, {IP: ip("10.244.1.3"), Hostname: "db-0", Ports: pg},
		{IP: ip("10.244.1.7"), Ports: pg}})
	z.SetService(svcObj("default", "db", "None", namedPort("pg", "TCP", 5432)))
	ext := svcObj("default", "search", "")
	ext.Spec.Type, ext.Spec.ExternalName = "ExternalName", "Search.Example.com"
	z.SetService(ext)
	return z
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestZoneLookup(t *testing.T) {
	z := testZone()
	tests := []struct {
		name string
		kind answerKind
		a    []string
		srv  []uint16
	}{
		{"web.default.svc.cluster.local.", exists, []string{"10.96.0.20"}, []uint16{80, 9100}},
		{"unnamed.default.svc.cluster.local.", exists, []string{"10.96.0.21"}, nil},
		{"db.default.svc.cluster.local.", exists, []string{"10.244.1.3", "10.244.1.7", "10.244.2.3"}, []uint16{15432, 15432, 15432}},
		{"db-0.db.default.svc.cluster.local.", exists, []string{"10.244.1.3"}, nil},
		{"db-1.db.default.svc.cluster.local.", exists, []string{"10.244.2.3"}, nil},
		{"10-244-1-7.db.default.svc.cluster.local.", exists, []string{"10.244.1.7"}, nil},
		{"10-244-1-3.db.default.svc.cluster.local.", nxdomain, nil, nil}, // it has a hostname
		{"db-2.db.default.svc.cluster.local.", nxdomain, nil, nil},
		{"db-0.web.default.svc.cluster.local.", nxdomain, nil, nil}, // not headless
		{"_pg._tcp.db.default.svc.cluster.local.", exists, nil, []uint16{15432, 15432, 15432}},
		{"search.default.svc.cluster.local.", exists, nil, nil},
		{"_http._tcp.web.default.svc.cluster.local.", exists, nil, []uint16{80}},
		{"_dns._udp.dns.kube-system.svc.cluster.local.", exists, nil, []uint16{53}},
		{"_dns._tcp.dns.kube-system.svc.cluster.local.", nxdomain, nil, nil},
		{"_tcp.web.default.svc.cluster.local.", exists, nil, nil},
		{"_udp.web.default.svc.cluster.local.", nxdomain, nil, nil},
		{"_nope._tcp.web.default.svc.cluster.local.", nxdomain, nil, nil},
		{"nope.default.svc.cluster.local.", nxdomain, nil, nil},
		{"web.other.svc.cluster.local.", nxdomain, nil, nil},
		{"default.svc.cluster.local.", exists, nil, nil},
		{"other.svc.cluster.local.", nxdomain, nil, nil},
		{"svc.cluster.local.", exists, nil, nil},
		{"cluster.local.", exists, nil, nil},
		{"web.default.pod.cluster.local.", nxdomain, nil, nil},
		{"a.b.web.default.svc.cluster.local.", nxdomain, nil, nil},
		{"example.com.", outside, nil, nil},
		{"notcluster.local.", outside, nil, nil},
	}
	for _, tt := range tests {
		r := z.lookup(tt.name)
		var a []string
		for _, ip := range r.a {
			a = append(a, ip.String())
		}
		var srv []uint16
		for _, s := range r.srv {
			srv = append(srv, s.port)
		}
		if r.kind != tt.kind || !slices.Equal(a, tt.a) || !slices.Equal(srv, tt.srv) {
			t.Errorf("%s: got kind %d a %v srv %v; want %d %v %v", tt.name, r.kind, a, srv, tt.kind, tt.a, tt.srv)
		}
	}
}

func TestZoneUpdates(t *testing.T) {
	z := testZone()
	z.DeleteService("default", "web")
	if r := z.lookup("web.default.svc.cluster.local."); r.kind != nxdomain {
		t.Fatalf("deleted service still resolves: %+v", r)
	}
	z.DeleteService("kube-system", "dns")
	if r := z.lookup("kube-system.svc.cluster.local."); r.kind != nxdomain {
		t.Fatalf("namespace without services still exists: %+v", r)
	}
	if r := z.lookup("search.default.svc.cluster.local."); r.cname != "search.example.com." {
		t.Fatalf("ExternalName: %+v", r)
	}
	if r := z.lookup("_pg._tcp.db.default.svc.cluster.local."); len(r.srv) != 3 || r.srv[0].target != "db-0.db.default.svc.cluster.local." ||
		r.srv[1].target != "10-244-1-7.db.default.svc.cluster.local." || r.srv[0].a[0] != ip("10.244.1.3") {
		t.Fatalf("headless SRV: %+v", r)
	}
	z.DeleteEndpoints("default", "db")
	if r := z.lookup("db.default.svc.cluster.local."); r.kind != exists || len(r.a) != 0 {
		t.Fatalf("headless service without endpoints: %+v", r)
	}
	// Endpoints seen before their Service are kept for it.
	z.SetEndpoints("ns2", "late", []Endpoint{{IP: ip("10.244.3.3")}})
	z.SetService(svcObj("ns2", "late", "None"))
	if r := z.lookup("late.ns2.svc.cluster.local."); fmt.Sprint(r.a) != fmt.Sprint([]netip.Addr{netip.MustParseAddr("10.244.3.3")}) {
		t.Fatalf("got %+v", r)
	}
}
