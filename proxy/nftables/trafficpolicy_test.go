package nftables

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// nodeSlice is one slice of ready endpoints on port 8080 (TCP), each
// "ip@node".
func nodeSlice(endpoints ...[2]string) []*v1.EndpointSlice {
	s := &v1.EndpointSlice{AddressType: "IPv4", Ports: []*v1.EndpointSlicePort{{Name: proto.String(""), Protocol: proto.String("TCP"), Port: proto.Int32(8080)}}}
	for _, e := range endpoints {
		s.Endpoints = append(s.Endpoints, &v1.Endpoint{Addresses: []string{e[0]}, NodeName: proto.String(e[1]),
			Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)}})
	}
	return []*v1.EndpointSlice{s}
}

func withETP(s *v1.Service, policy string) *v1.Service {
	s.Spec.ExternalTrafficPolicy = policy
	return s
}

func TestBuildExternalTrafficPolicyLocal(t *testing.T) {
	lb := func() *v1.Service {
		s := withETP(svc("lb", "LoadBalancer", "10.96.0.30", port("", "TCP", 80, 30090)), "Local")
		s.Status = &v1.ServiceStatus{LoadBalancer: &v1.LoadBalancerStatus{Ingress: []*v1.LoadBalancerIngress{{Ip: "192.0.2.10"}}}}
		return s
	}
	tests := []struct {
		name   string
		svc    *v1.Service
		slices []*v1.EndpointSlice
		want   string
	}{{
		name:   "NodePort, Local: the nodePort reaches the external chain, the ClusterIP the service chain",
		svc:    withETP(svc("np", "NodePort", "10.96.0.31", port("", "TCP", 80, 30091)), "Local"),
		slices: nodeSlice([2]string{"10.244.1.2", "node1"}, [2]string{"10.244.2.2", "node2"}, [2]string{"10.244.1.3", "node1"}),
		want: `chain external-default/np/tcp/80 {
	ip saddr 10.244.0.0/16 goto svc-default/np/tcp/80
	fib saddr type local goto svc-default/np/tcp/80
	meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.1.2 . 8080, 1 : 10.244.1.3 . 8080 }
}
chain svc-default/np/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat ip to numgen random mod 3 map { 0 : 10.244.1.2 . 8080, 1 : 10.244.1.3 . 8080, 2 : 10.244.2.2 . 8080 }
}
service-ips {
	10.96.0.31 . tcp . 80 : goto svc-default/np/tcp/80
}
service-nodeports {
	tcp . 30091 : goto external-default/np/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
	10.244.1.3 . 10.244.1.3
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name:   "no local endpoint: outside traffic dropped, pods still served cluster-wide",
		svc:    withETP(svc("np", "NodePort", "10.96.0.31", port("", "TCP", 80, 30091)), "Local"),
		slices: nodeSlice([2]string{"10.244.2.2", "node2"}),
		want: `chain external-default/np/tcp/80 {
	ip saddr 10.244.0.0/16 goto svc-default/np/tcp/80
	fib saddr type local goto svc-default/np/tcp/80
	drop
}
chain svc-default/np/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.2.2:8080
}
service-ips {
	10.96.0.31 . tcp . 80 : goto svc-default/np/tcp/80
}
service-nodeports {
	tcp . 30091 : goto external-default/np/tcp/80
}
hairpin {
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name:   "LoadBalancer, Local: its ingress addresses and nodePort reach the external chain",
		svc:    lb(),
		slices: nodeSlice([2]string{"10.244.1.2", "node1"}),
		want: `chain external-default/lb/tcp/80 {
	ip saddr 10.244.0.0/16 goto svc-default/lb/tcp/80
	fib saddr type local goto svc-default/lb/tcp/80
	meta l4proto tcp dnat to 10.244.1.2:8080
}
chain svc-default/lb/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.1.2:8080
}
service-ips {
	10.96.0.30 . tcp . 80 : goto svc-default/lb/tcp/80
	192.0.2.10 . tcp . 80 : goto external-default/lb/tcp/80
}
service-nodeports {
	tcp . 30090 : goto external-default/lb/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
}
`,
	}, {
		name: "no endpoint anywhere: rejected as with Cluster",
		svc:  lb(),
		want: `reject-ips {
	10.96.0.30 . tcp . 80
	192.0.2.10 . tcp . 80
}
reject-nodeports {
	tcp . 30090
}
`,
	}, {
		name:   "ClusterIP Service: the policy does not apply (no external traffic)",
		svc:    withETP(svc("c", "ClusterIP", "10.96.0.32", port("", "TCP", 80, 0)), "Local"),
		slices: nodeSlice([2]string{"10.244.2.2", "node2"}),
		want: `chain svc-default/c/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.2.2:8080
}
service-ips {
	10.96.0.32 . tcp . 80 : goto svc-default/c/tcp/80
}
hairpin {
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name:   "Cluster: no external chain",
		svc:    withETP(svc("np", "NodePort", "10.96.0.31", port("", "TCP", 80, 30091)), "Cluster"),
		slices: nodeSlice([2]string{"10.244.2.2", "node2"}),
		want: `chain svc-default/np/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.2.2:8080
}
service-ips {
	10.96.0.31 . tcp . 80 : goto svc-default/np/tcp/80
}
service-nodeports {
	tcp . 30091 : goto svc-default/np/tcp/80
}
hairpin {
	10.244.2.2 . 10.244.2.2
}
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sps, err := ServicePorts(tt.svc, tt.slices, "node1")
			if err != nil {
				t.Fatal(err)
			}
			if got := Build(sps, Options{ClusterCIDR: clusterCIDR}).String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func withITP(s *v1.Service, policy string) *v1.Service {
	s.Spec.InternalTrafficPolicy = policy
	return s
}

func TestBuildInternalTrafficPolicyLocal(t *testing.T) {
	tests := []struct {
		name   string
		svc    *v1.Service
		slices []*v1.EndpointSlice
		want   string
	}{{
		name:   "the ClusterIP reaches only the node's endpoints",
		svc:    withITP(svc("c", "ClusterIP", "10.96.0.33", port("", "TCP", 80, 0)), "Local"),
		slices: nodeSlice([2]string{"10.244.1.2", "node1"}, [2]string{"10.244.2.2", "node2"}),
		want: `chain svc-default/c/tcp/80 {
	ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000
	meta l4proto tcp dnat to 10.244.1.2:8080
}
service-ips {
	10.96.0.33 . tcp . 80 : goto svc-default/c/tcp/80
}
hairpin {
	10.244.1.2 . 10.244.1.2
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name:   "no local endpoint: dropped (endpoints elsewhere), not rejected",
		svc:    withITP(svc("c", "ClusterIP", "10.96.0.33", port("", "TCP", 80, 0)), "Local"),
		slices: nodeSlice([2]string{"10.244.2.2", "node2"}),
		want: `chain svc-default/c/tcp/80 {
	drop
}
service-ips {
	10.96.0.33 . tcp . 80 : goto svc-default/c/tcp/80
}
hairpin {
	10.244.2.2 . 10.244.2.2
}
`,
	}, {
		name: "no endpoint anywhere: rejected",
		svc:  withITP(svc("c", "ClusterIP", "10.96.0.33", port("", "TCP", 80, 0)), "Local"),
		want: `reject-ips {
	10.96.0.33 . tcp . 80
}
`,
	}, {
		name:   "both Local: pods short-circuit to the (local) service chain",
		svc:    withITP(withETP(svc("np", "NodePort", "10.96.0.34", port("", "TCP", 80, 30093)), "Local"), "Local"),
		slices: nodeSlice([2]string{"10.244.2.2", "node2"}),
		want: `chain external-default/np/tcp/80 {
	ip saddr 10.244.0.0/16 goto svc-default/np/tcp/80
	fib saddr type local goto svc-default/np/tcp/80
	drop
}
chain svc-default/np/tcp/80 {
	drop
}
service-ips {
	10.96.0.34 . tcp . 80 : goto svc-default/np/tcp/80
}
service-nodeports {
	tcp . 30093 : goto external-default/np/tcp/80
}
hairpin {
	10.244.2.2 . 10.244.2.2
}
`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sps, err := ServicePorts(tt.svc, tt.slices, "node1")
			if err != nil {
				t.Fatal(err)
			}
			if got := Build(sps, Options{ClusterCIDR: clusterCIDR}).String(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestLocalEndpoints(t *testing.T) {
	yes, no := proto.Bool(true), proto.Bool(false)
	ep := func(ip, node string, ready, serving, terminating *bool) *v1.Endpoint {
		return &v1.Endpoint{Addresses: []string{ip}, NodeName: proto.String(node),
			Conditions: &v1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}}
	}
	port := []*v1.EndpointSlicePort{{Name: proto.String("http"), Protocol: proto.String("TCP"), Port: proto.Int32(8080)}}
	s := func(e ...*v1.Endpoint) []*v1.EndpointSlice {
		return []*v1.EndpointSlice{{AddressType: "IPv4", Ports: port, Endpoints: e}}
	}
	cases := []struct {
		slices []*v1.EndpointSlice
		want   []string
	}{
		{s(ep("10.244.1.2", "node1", yes, yes, no), ep("10.244.2.2", "node2", yes, yes, no)), []string{"10.244.1.2:8080"}},
		// Remote ones ready, the local one draining: the local draining one
		// (a ready remote endpoint does not count for Local).
		{s(ep("10.244.1.4", "node1", no, yes, yes), ep("10.244.2.2", "node2", yes, yes, no)), []string{"10.244.1.4:8080"}},
		{s(ep("10.244.2.2", "node2", yes, yes, no)), nil},
	}
	for i, c := range cases {
		var got []string
		for _, e := range LocalEndpoints(c.slices, "http", TCP, "node1") {
			got = append(got, e.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("case %d: %v, want %v", i, got, c.want)
		}
	}
	if got := LocalEndpoints(s(ep("10.244.1.2", "", yes, yes, no)), "http", TCP, ""); got != nil {
		t.Errorf("no node name: %v, want none", got)
	}
}

func TestDiffExternalTrafficPolicyLocal(t *testing.T) {
	local := func(endpoints ...string) ServicePort {
		p := sp("np", UDP, "10.96.0.31", 53, 30053, "10.244.1.2:53", "10.244.2.2:53")
		p.ExternalLocal = true
		for _, e := range endpoints {
			i := slices.IndexFunc(p.Endpoints, func(x Endpoint) bool { return x.String() == e })
			p.LocalEndpoints = append(p.LocalEndpoints, p.Endpoints[i])
		}
		return p
	}
	cluster := sp("np", UDP, "10.96.0.31", 53, 30053, "10.244.1.2:53", "10.244.2.2:53")
	tests := []struct {
		name     string
		old, new *Ruleset
		want     []string
	}{{
		name: "Cluster to Local: the external chain added, the nodePort moved to it",
		old:  build(cluster), new: build(local("10.244.1.2:53")),
		want: []string{"+chain external-default/np/udp/53", "+np udp . 30053 external-default/np/udp/53", "-np udp . 30053"},
	}, {
		name: "the local endpoint leaves: the external chain drops, its nodePort flows cleared",
		old:  build(local("10.244.1.2:53")), new: build(local()),
		want: []string{"stale invalid IP:30053<-10.244.1.2", "~chain external-default/np/udp/53"},
	}, {
		name: "Local to Cluster: the external chain goes",
		old:  build(local()), new: build(cluster),
		want: []string{"+np udp . 30053 svc-default/np/udp/53", "-chain external-default/np/udp/53", "-np udp . 30053"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summary(Diff(tt.old, tt.new))
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
		})
	}
}
