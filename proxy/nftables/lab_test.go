package nftables

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// lab is one node with a pod bridge and two pods, plus a peer host on the
// node's "eth0" subnet, all in namespaces of the test's own:
//
//	peer (192.168.77.2) --- node eth0 192.168.77.1
//	                        node cni0 10.244.1.1/24 --- pod1 10.244.1.2, pod2 10.244.1.3
type lab struct {
	node, peer, pod1, pod2 *nstest.NS
}

func newLab(t *testing.T) *lab {
	l := &lab{node: nstest.New(t, "node"), peer: nstest.New(t, "peer"), pod1: nstest.New(t, "pod1"), pod2: nstest.New(t, "pod2")}
	l.node.Sysctl("net/ipv4/ip_forward", "1")
	l.node.Veth("eth0", l.peer, "eth0")
	l.node.AddAddr("eth0", "192.168.77.1/24")
	l.peer.AddAddr("eth0", "192.168.77.2/24")
	l.peer.DefaultVia("192.168.77.1")
	l.node.Bridge("cni0", "10.244.1.1/24")
	for i, pod := range []*nstest.NS{l.pod1, l.pod2} {
		hostEnd := fmt.Sprintf("veth%d", i+1)
		l.node.Veth(hostEnd, pod, "eth0")
		l.node.Enslave(hostEnd, "cni0")
		pod.AddAddr("eth0", fmt.Sprintf("10.244.1.%d/24", i+2))
		pod.DefaultVia("10.244.1.1")
	}
	return l
}

// serve answers every connection on addr inside ns with "<name> <remote
// address as seen>\n", so tests see which endpoint answered and whether
// the client was masqueraded.
func serve(t *testing.T, ns *nstest.NS, name, addr string) {
	ln := ns.Listen("tcp", addr)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			fmt.Fprintf(c, "%s %s\n", name, host)
			c.Close()
		}
	}()
}

// ask connects from ns to addr and returns the server's line.
func ask(ns *nstest.NS, addr string) (string, error) {
	c, err := ns.Dial("tcp", addr, 3*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// fakeSource is a Source over maps, safe for concurrent use.
type fakeSource struct {
	mu   sync.Mutex
	svcs map[string]*v1.Service
	eps  map[string]*v1.Endpoints
}

func newFakeSource() *fakeSource {
	return &fakeSource{svcs: map[string]*v1.Service{}, eps: map[string]*v1.Endpoints{}}
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

func (f *fakeSource) remove(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.svcs, key)
	delete(f.eps, key)
}

// endpointsOf is a one-subset Endpoints of the given ready IPs on port.
func endpointsOf(port int32, proto string, ips ...string) *v1.Endpoints {
	return eps(&v1.EndpointSubset{Addresses: addrs(ips...), Ports: []*v1.EndpointPort{{Port: port, Protocol: proto}}})
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %v", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func listTable(t *testing.T, ns *nstest.NS) string {
	t.Helper()
	out, err := ns.Exec(context.Background(), "nft", "list", "table", "ip", DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
