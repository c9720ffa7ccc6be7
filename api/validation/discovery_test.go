package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func slice() *v1.EndpointSlice {
	return &v1.EndpointSlice{Metadata: &v1.ObjectMeta{Name: "web-abcde", Namespace: "default", Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: "IPv4",
		Endpoints: []*v1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)},
			NodeName: proto.String("node1"), Hostname: proto.String("web-0")}},
		Ports: []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(8080)}}}
}

func TestDiscoveryValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return slice() }, nil},
		{"no ports", func() v1.Object { s := slice(); s.Ports = nil; return s }, nil},
		{"address type required", func() v1.Object { s := slice(); s.AddressType = ""; return s }, []string{"addressType: required"}},
		{"ipv6 refused", func() v1.Object { s := slice(); s.AddressType = "IPv6"; return s }, []string{"addressType", "IPv4-only"}},
		{"fqdn refused", func() v1.Object { s := slice(); s.AddressType = "FQDN"; return s }, []string{"addressType", "not supported"}},
		{"unknown type", func() v1.Object { s := slice(); s.AddressType = "IPX"; return s }, []string{"addressType", "not one of"}},
		{"bad address", func() v1.Object { s := slice(); s.Endpoints[0].Addresses[0] = "10.0.0"; return s }, []string{"endpoints[0].addresses[0]"}},
		{"no address", func() v1.Object { s := slice(); s.Endpoints[0].Addresses = nil; return s }, []string{"endpoints[0].addresses", "at least 1"}},
		{"bad hostname", func() v1.Object { s := slice(); s.Endpoints[0].Hostname = proto.String("Web_0"); return s }, []string{"endpoints[0].hostname"}},
		{"port out of range", func() v1.Object { s := slice(); s.Ports[0].Port = proto.Int32(70000); return s }, []string{"ports[0].port", "70000"}},
		{"bad protocol", func() v1.Object { s := slice(); s.Ports[0].Protocol = proto.String("ICMP"); return s }, []string{"ports[0].protocol"}},
		{"duplicate port name", func() v1.Object {
			s := slice()
			s.Ports = append(s.Ports, &v1.EndpointSlicePort{Name: proto.String("http"), Port: proto.Int32(81)})
			return s
		}, []string{"ports[1].name", "Duplicate"}},
		{"too many endpoints", func() v1.Object {
			s := slice()
			for range 1000 {
				s.Endpoints = append(s.Endpoints, &v1.Endpoint{Addresses: []string{"10.244.1.6"}})
			}
			return s
		}, []string{"endpoints", "at most 1000"}},
		{"node hints refused", func() v1.Object {
			s := slice()
			s.Endpoints[0].Hints = &v1.EndpointHints{ForNodes: []*v1.ForNode{{Name: "node1"}}}
			return s
		}, []string{"endpoints[0].hints.forNodes"}},
	})
}
