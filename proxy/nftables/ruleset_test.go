package nftables

import (
	"net/netip"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func svc(name, typ, ip string, ports ...*v1.ServicePort) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.ServiceSpec{Type: typ, ClusterIp: ip, Ports: ports}}
}

func port(name, proto string, p int32, nodePort int32) *v1.ServicePort {
	return &v1.ServicePort{Name: name, Protocol: proto, Port: p, NodePort: nodePort}
}

func addrs(ips ...string) []*v1.EndpointAddress {
	var out []*v1.EndpointAddress
	for _, ip := range ips {
		out = append(out, &v1.EndpointAddress{Ip: ip})
	}
	return out
}

func eps(subsets ...*v1.EndpointSubset) *v1.Endpoints {
	return &v1.Endpoints{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "x"}, Subsets: subsets}
}

var clusterCIDR = netip.MustParsePrefix("10.244.0.0/16")

func TestBuild(t *testing.T) {
	tests := []struct {
		name string
		svc  *v1.Service
		eps  *v1.Endpoints
		want string
	}{{
		name: "three endpoints, chosen by numgen",
		svc:  svc("web", "ClusterIP", "10.96.0.20", port("", "TCP", 80, 0)),
		eps: eps(&v1.EndpointSubset{Addresses: addrs("10.244.1.3", "10.244.1.2", "10.244.2.2"),
			NotReadyAddresses: addrs("10.244.2.9"), Ports: []*v1.EndpointPort{{Port: 8080, Protocol: "TCP"}}}),
		want: `chain svc-default/web/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat ip to numgen random mod 3 map { 0 : 10.244.1.2 . 8080, 1 : 10.244.1.3 . 8080, 2 : 10.244.2.2 . 8080 }
}
service-ips {
	10.96.0.20 . tcp . 80 : goto svc-default/web/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
	10.244.1.3 . 10.244.1.3
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name: "LoadBalancer: its ingress addresses reach the service chain; without endpoints they are rejected",
		svc: func() *v1.Service {
			s := svc("lb", "LoadBalancer", "10.96.0.22", port("", "TCP", 80, 30081))
			s.Status = &v1.ServiceStatus{LoadBalancer: &v1.LoadBalancerStatus{Ingress: []*v1.LoadBalancerIngress{{Ip: "192.0.2.10"}, {Ip: "192.0.2.11"}}}}
			return s
		}(),
		eps: eps(&v1.EndpointSubset{Addresses: addrs("10.244.1.2"), Ports: []*v1.EndpointPort{{Port: 80, Protocol: "TCP"}}}),
		want: `chain svc-default/lb/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.1.2:80
}
service-ips {
	10.96.0.22 . tcp . 80 : goto svc-default/lb/tcp/80
	192.0.2.10 . tcp . 80 : goto svc-default/lb/tcp/80
	192.0.2.11 . tcp . 80 : goto svc-default/lb/tcp/80
}
service-nodeports {
	tcp . 30081 : goto svc-default/lb/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
}
`,
	}, {
		name: "LoadBalancer without endpoints",
		svc: func() *v1.Service {
			s := svc("lb", "LoadBalancer", "10.96.0.22", port("", "TCP", 80, 0))
			s.Status = &v1.ServiceStatus{LoadBalancer: &v1.LoadBalancerStatus{Ingress: []*v1.LoadBalancerIngress{{Ip: "192.0.2.10"}}}}
			return s
		}(),
		want: `reject-ips {
	10.96.0.22 . tcp . 80
	192.0.2.10 . tcp . 80
}
`,
	}, {
		name: "one endpoint: plain dnat; NodePort",
		svc:  svc("np", "NodePort", "10.96.0.21", port("", "TCP", 80, 30080)),
		eps:  eps(&v1.EndpointSubset{Addresses: addrs("10.244.1.2"), Ports: []*v1.EndpointPort{{Port: 80, Protocol: "TCP"}}}),
		want: `chain svc-default/np/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.1.2:80
}
service-ips {
	10.96.0.21 . tcp . 80 : goto svc-default/np/tcp/80
}
service-nodeports {
	tcp . 30080 : goto svc-default/np/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
}
`,
	}, {
		name: "no ready endpoint: rejected, NodePort too",
		svc:  svc("empty", "NodePort", "10.96.0.22", port("", "UDP", 53, 30053)),
		eps:  eps(&v1.EndpointSubset{NotReadyAddresses: addrs("10.244.1.2"), Ports: []*v1.EndpointPort{{Port: 53, Protocol: "UDP"}}}),
		want: `reject-ips {
	10.96.0.22 . udp . 53
}
reject-nodeports {
	udp . 30053
}
`,
	}, {
		name: "no Endpoints object at all",
		svc:  svc("none", "ClusterIP", "10.96.0.23", port("", "TCP", 80, 0)),
		want: `reject-ips {
	10.96.0.23 . tcp . 80
}
`,
	}, {
		name: "named ports matched by name and protocol, per subset",
		svc:  svc("multi", "ClusterIP", "10.96.0.24", port("http", "TCP", 80, 0), port("dns", "UDP", 53, 0)),
		eps: eps(
			&v1.EndpointSubset{Addresses: addrs("10.244.1.2"), Ports: []*v1.EndpointPort{{Name: "http", Port: 8080, Protocol: "TCP"}, {Name: "dns", Port: 5353, Protocol: "UDP"}}},
			&v1.EndpointSubset{Addresses: addrs("10.244.2.2"), Ports: []*v1.EndpointPort{{Name: "http", Port: 9090, Protocol: "TCP"}, {Name: "dns", Port: 5353, Protocol: "TCP"}}},
		),
		want: `chain svc-default/multi/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.1.2 . 8080, 1 : 10.244.2.2 . 9090 }
}
chain svc-default/multi/udp/53 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto udp dnat to 10.244.1.2:5353
}
service-ips {
	10.96.0.24 . tcp . 80 : goto svc-default/multi/tcp/80
	10.96.0.24 . udp . 53 : goto svc-default/multi/udp/53
}
hairpin {
	10.244.1.2 . 10.244.1.2
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name: "headless: nothing",
		svc:  svc("headless", "ClusterIP", "None", port("", "TCP", 80, 0)),
		eps:  eps(&v1.EndpointSubset{Addresses: addrs("10.244.1.2"), Ports: []*v1.EndpointPort{{Port: 80, Protocol: "TCP"}}}),
		want: ``,
	}, {
		name: "duplicates and bad addresses dropped",
		svc:  svc("dup", "ClusterIP", "10.96.0.25", port("", "TCP", 80, 0)),
		eps: eps(
			&v1.EndpointSubset{Addresses: addrs("10.244.1.2", "bogus", "fd00::1"), Ports: []*v1.EndpointPort{{Port: 80, Protocol: "TCP"}}},
			&v1.EndpointSubset{Addresses: addrs("10.244.1.2"), Ports: []*v1.EndpointPort{{Port: 80, Protocol: "TCP"}}},
		),
		want: `chain svc-default/dup/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.1.2:80
}
service-ips {
	10.96.0.25 . tcp . 80 : goto svc-default/dup/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
}
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sps, err := ServicePorts(tt.svc, slicesOf(tt.eps), "")
			if err != nil {
				t.Fatal(err)
			}
			got := Build(sps, Options{ClusterCIDR: clusterCIDR}).String()
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestServicePortsErrorsNameTheField(t *testing.T) {
	tests := []struct {
		svc  *v1.Service
		want string
	}{
		{svc("a", "ClusterIP", "10.96.0.300", port("", "TCP", 80, 0)), "spec.clusterIP"},
		{svc("b", "ClusterIP", "fd00::1", port("", "TCP", 80, 0)), "spec.clusterIP"},
		{svc("c", "ClusterIP", "10.96.0.1", port("", "SCTP", 80, 0)), "spec.ports[0].protocol"},
		{svc("d", "ClusterIP", "10.96.0.1", port("", "TCP", 70000, 0)), "spec.ports[0].port"},
	}
	for _, tt := range tests {
		_, err := ServicePorts(tt.svc, nil, "")
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "default/"+tt.svc.Metadata.Name) {
			t.Errorf("%s: got %v, want an error naming %s", tt.svc.Metadata.Name, err, tt.want)
		}
	}
}

func TestBuildWithoutClusterCIDRMasqueradesOnlyHairpin(t *testing.T) {
	sps := []ServicePort{{Service: "default/a", Protocol: TCP, ClusterIP: netip.MustParseAddr("10.96.0.5"), Port: 80,
		Endpoints: []Endpoint{{IP: netip.MustParseAddr("10.244.1.2"), Port: 80}}}}
	got := Build(sps, Options{}).String()
	if strings.Contains(got, "meta mark") || !strings.Contains(got, "10.244.1.2 . 10.244.1.2") {
		t.Errorf("got\n%s", got)
	}
}

func TestBuildCapsEndpoints(t *testing.T) {
	sp := ServicePort{Service: "default/big", Protocol: TCP, ClusterIP: netip.MustParseAddr("10.96.0.5"), Port: 80}
	base := netip.MustParseAddr("10.244.0.0")
	for i := 0; i < MaxEndpoints+50; i++ {
		base = base.Next()
		sp.Endpoints = append(sp.Endpoints, Endpoint{IP: base, Port: 80})
	}
	rs := Build([]ServicePort{sp}, Options{})
	if n := len(rs.Chains[sp.ChainName()].Endpoints); n != MaxEndpoints {
		t.Fatalf("%d endpoints, want %d", n, MaxEndpoints)
	}
}
