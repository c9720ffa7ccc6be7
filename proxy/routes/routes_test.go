package routes

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

func node(name, podCIDR, internalIP string) *v1.Node {
	n := &v1.Node{Metadata: &v1.ObjectMeta{Name: name}, Spec: &v1.NodeSpec{PodCidr: podCIDR}, Status: &v1.NodeStatus{}}
	if internalIP != "" {
		n.Status.Addresses = []*v1.NodeAddress{{Type: "Hostname", Address: name}, {Type: "InternalIP", Address: internalIP}}
	}
	return n
}

func TestDesired(t *testing.T) {
	nodes := []*v1.Node{
		node("a", "10.244.1.0/24", "192.168.77.1"),
		node("c", "10.244.3.0/24", "192.168.77.3"),
		node("b", "10.244.2.0/24", "192.168.77.2"),
		node("no-cidr", "", "192.168.77.4"),
		node("no-ip", "10.244.5.0/24", ""),
		node("v6", "fd00::/64", "fd00::1"),
		node("overlap", "10.244.1.0/25", "192.168.77.6"),
	}
	nodes = append(nodes, &v1.Node{Metadata: &v1.ObjectMeta{Name: "multi"},
		Spec:   &v1.NodeSpec{PodCidrs: []string{"10.244.7.0/24", "fd00:7::/64"}},
		Status: &v1.NodeStatus{Addresses: []*v1.NodeAddress{{Type: "InternalIP", Address: "fd00::7"}, {Type: "InternalIP", Address: "192.168.77.7"}}}})
	got, problems := Desired(nodes, "a")
	var s []string
	for _, r := range got {
		s = append(s, fmt.Sprintf("%s via %s (%s)", r.Dst, r.Via, r.Node))
	}
	want := []string{"10.244.2.0/24 via 192.168.77.2 (b)", "10.244.3.0/24 via 192.168.77.3 (c)", "10.244.7.0/24 via 192.168.77.7 (multi)"}
	if !slices.Equal(s, want) {
		t.Errorf("routes\n%q\nwant\n%q", s, want)
	}
	joined := strings.Join(problems, "\n")
	// v6 has no IPv4 pod CIDR: nothing to route, nothing to report.
	if len(problems) != 2 || !strings.Contains(joined, "node no-ip: no IPv4 InternalIP") ||
		!strings.Contains(joined, "node overlap: pod CIDR 10.244.1.0/25 overlaps") {
		t.Errorf("problems %q", problems)
	}
}

type nodeList struct {
	mu    sync.Mutex
	nodes []*v1.Node
}

func (l *nodeList) List() []*v1.Node {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.nodes)
}

func (l *nodeList) set(nodes ...*v1.Node) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodes = nodes
}

func routesIn(t *testing.T, ns *nstest.NS) []string {
	t.Helper()
	rs, err := ns.NL.RouteList(nil, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs {
		if r.Dst == nil || r.Gw == nil {
			continue
		}
		out = append(out, fmt.Sprintf("%s via %s proto %d", r.Dst, r.Gw, r.Protocol))
	}
	slices.Sort(out)
	return out
}

func waitRoutes(t *testing.T, ns *nstest.NS, want ...string) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, fmt.Sprintf("routes %q", want), func() error {
		if got := routesIn(t, ns); !slices.Equal(got, want) {
			return fmt.Errorf("routes are %q", got)
		}
		return nil
	})
}

func TestManagerInNamespace(t *testing.T) {
	a, peer := nstest.New(t, "rta"), nstest.New(t, "rtpeer")
	a.Veth("eth0", peer, "eth0")
	a.AddAddr("eth0", "192.168.77.1/24")
	// A route that is not ours (another protocol): never touched.
	if err := a.NL.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.IP{10, 50, 0, 0}, Mask: net.CIDRMask(16, 32)}, Gw: net.IP{192, 168, 77, 9}}); err != nil {
		t.Fatal(err)
	}
	// A stale route of ours, from a node deleted while the proxy was down.
	if err := a.NL.RouteAdd(&netlink.Route{Dst: &net.IPNet{IP: net.IP{10, 244, 9, 0}, Mask: net.CIDRMask(24, 32)}, Gw: net.IP{192, 168, 77, 99}, Protocol: RouteProtocol}); err != nil {
		t.Fatal(err)
	}
	nodes := &nodeList{}
	nodes.set(node("a", "10.244.1.0/24", "192.168.77.1"), node("b", "10.244.2.0/24", "192.168.77.2"), node("c", "10.244.3.0/24", "192.168.77.3"),
		node("far", "10.244.4.0/24", "10.99.0.1")) // not on the segment: cannot be routed
	m, err := New(Config{NodeName: "a", Nodes: nodes, NetNS: a.Fd()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	waitRoutes(t, a, "10.244.2.0/24 via 192.168.77.2 proto 116", "10.244.3.0/24 via 192.168.77.3 proto 116", "10.50.0.0/16 via 192.168.77.9 proto 3")

	// Node c goes away, b moves.
	nodes.set(node("a", "10.244.1.0/24", "192.168.77.1"), node("b", "10.244.2.0/24", "192.168.77.5"))
	m.Changed()
	waitRoutes(t, a, "10.244.2.0/24 via 192.168.77.5 proto 116", "10.50.0.0/16 via 192.168.77.9 proto 3")

	// A route deleted by hand comes back at the next reconcile.
	if err := a.NL.RouteDel(&netlink.Route{Dst: &net.IPNet{IP: net.IP{10, 244, 2, 0}, Mask: net.CIDRMask(24, 32)}, Protocol: RouteProtocol}); err != nil {
		t.Fatal(err)
	}
	m.Changed()
	waitRoutes(t, a, "10.244.2.0/24 via 192.168.77.5 proto 116", "10.50.0.0/16 via 192.168.77.9 proto 3")

	cancel()
	<-done
	done <- nil
	n, err := Cleanup(a.Fd())
	if err != nil || n != 1 {
		t.Fatalf("Cleanup: %d %v", n, err)
	}
	waitRoutes(t, a, "10.50.0.0/16 via 192.168.77.9 proto 3")
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: &nodeList{}}, "--node-name"},
		{Config{NodeName: "a"}, "Nodes"},
		{Config{NodeName: "a", Nodes: &nodeList{}, NetNS: -1}, "NetNS"},
	} {
		if err := c.cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %s", c.cfg, err, c.want)
		}
	}
}
