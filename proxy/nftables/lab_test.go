package nftables

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

type lab struct {
	node, peer, pod1, pod2 *nstest.NS
}

// newLab is nstest.NewLab with two pods: pod1 10.244.1.2, pod2 10.244.1.3.
func newLab(t *testing.T) *lab {
	l := nstest.NewLab(t, 2)
	return &lab{node: l.Node, peer: l.Peer, pod1: l.Pods[0], pod2: l.Pods[1]}
}

func serve(t *testing.T, ns *nstest.NS, name, addr string) { nstest.Serve(t, ns, name, addr) }

func ask(ns *nstest.NS, addr string) (string, error) { return nstest.Ask(ns, addr) }

// fakeSource is a Source over maps, safe for concurrent use.
type fakeSource struct {
	mu   sync.Mutex
	svcs map[string]*v1.Service
	eps  map[string]*v1.Endpoints
	// slices, when set for a key, are its EndpointSlices as given
	// (endpoints with node names), in place of eps.
	slices map[string][]*v1.EndpointSlice
}

func newFakeSource() *fakeSource {
	return &fakeSource{svcs: map[string]*v1.Service{}, eps: map[string]*v1.Endpoints{}, slices: map[string][]*v1.EndpointSlice{}}
}

func (f *fakeSource) Service(key string) (*v1.Service, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.svcs[key]
	return s, ok
}

func (f *fakeSource) Endpoints(key string) (*v1.Endpoints, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.eps[key]
	return e, ok
}

// EndpointSlices is the Endpoints of key as the one slice per subset an
// endpoint slice mirror would make of them.
func (f *fakeSource) EndpointSlices(key string) []*v1.EndpointSlice {
	f.mu.Lock()
	given, ok := f.slices[key]
	f.mu.Unlock()
	if ok {
		return given
	}
	e, _ := f.Endpoints(key)
	return slicesOf(e)
}

// slicesOf turns Endpoints into slices: addresses ready, not-ready
// addresses not.
func slicesOf(e *v1.Endpoints) []*v1.EndpointSlice {
	var out []*v1.EndpointSlice
	for _, ss := range e.GetSubsets() {
		s := &v1.EndpointSlice{AddressType: "IPv4"}
		for _, p := range ss.GetPorts() {
			s.Ports = append(s.Ports, &v1.EndpointSlicePort{Name: proto.String(p.GetName()), Protocol: proto.String(p.GetProtocol()), Port: proto.Int32(p.GetPort())})
		}
		for _, a := range ss.GetAddresses() {
			s.Endpoints = append(s.Endpoints, &v1.Endpoint{Addresses: []string{a.GetIp()}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)}})
		}
		for _, a := range ss.GetNotReadyAddresses() {
			s.Endpoints = append(s.Endpoints, &v1.Endpoint{Addresses: []string{a.GetIp()}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(false)}})
		}
		out = append(out, s)
	}
	return out
}

func (f *fakeSource) ServiceKeys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Keys(f.svcs))
}

func (f *fakeSource) set(s *v1.Service, e *v1.Endpoints) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := v1.Key(s)
	f.svcs[key] = s
	if e == nil {
		delete(f.eps, key)
	} else {
		f.eps[key] = e
	}
	return key
}

// setSlices sets a Service with EndpointSlices of its own.
func (f *fakeSource) setSlices(s *v1.Service, slices []*v1.EndpointSlice) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := v1.Key(s)
	f.svcs[key] = s
	f.slices[key] = slices
	return key
}

func (f *fakeSource) remove(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.svcs, key)
	delete(f.eps, key)
	delete(f.slices, key)
}

// endpointsOf is a one-subset Endpoints of the given ready IPs on port.
func endpointsOf(port int32, proto string, ips ...string) *v1.Endpoints {
	return eps(&v1.EndpointSubset{Addresses: addrs(ips...), Ports: []*v1.EndpointPort{{Port: port, Protocol: proto}}})
}

func listTable(t *testing.T, ns *nstest.NS) string {
	t.Helper()
	out, err := ns.Exec(context.Background(), "nft", "list", "table", "ip", DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
