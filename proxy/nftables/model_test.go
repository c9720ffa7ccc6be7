package nftables

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestReadyEndpointsFromSlices(t *testing.T) {
	ep := func(ip string, ready, serving, terminating *bool) *v1.Endpoint {
		return &v1.Endpoint{Addresses: []string{ip}, Conditions: &v1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating}}
	}
	yes, no := proto.Bool(true), proto.Bool(false)
	port := []*v1.EndpointSlicePort{{Name: proto.String("http"), Protocol: proto.String("TCP"), Port: proto.Int32(8080)}}
	a := &v1.EndpointSlice{AddressType: "IPv4", Ports: port, Endpoints: []*v1.Endpoint{
		ep("10.244.1.2", yes, yes, no), ep("10.244.1.3", nil, nil, nil), // unset conditions: ready
		ep("10.244.1.4", no, yes, yes), // draining
		ep("10.244.1.5", no, no, no),   // not ready
	}}
	b := &v1.EndpointSlice{AddressType: "IPv4", Ports: port, Endpoints: []*v1.Endpoint{ep("10.244.2.2", yes, yes, no), ep("10.244.1.2", yes, yes, no)}}
	other := &v1.EndpointSlice{AddressType: "IPv4", Ports: []*v1.EndpointSlicePort{{Name: proto.String("dns"), Protocol: proto.String("UDP"), Port: proto.Int32(53)}},
		Endpoints: []*v1.Endpoint{ep("10.244.3.3", yes, yes, no)}}
	cases := []struct {
		slices []*v1.EndpointSlice
		want   string
	}{
		{[]*v1.EndpointSlice{a, b, other}, "[10.244.1.2:8080 10.244.1.3:8080 10.244.2.2:8080]"},
		// Nothing ready: the serving terminating endpoints take new connections.
		{[]*v1.EndpointSlice{{AddressType: "IPv4", Ports: port, Endpoints: []*v1.Endpoint{ep("10.244.1.4", no, yes, yes), ep("10.244.1.6", no, no, yes)}}}, "[10.244.1.4:8080]"},
		{nil, "[]"},
	}
	for i, c := range cases {
		if got := fmt.Sprint(ReadyEndpoints(c.slices, "http", TCP)); got != c.want {
			t.Errorf("case %d: %s, want %s", i, got, c.want)
		}
	}
}
