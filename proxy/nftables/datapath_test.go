package nftables

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// lbIP is a load-balancer address (status.loadBalancer.ingress) in the
// lab: TEST-NET-3, DNATed on the lab's node, never leaving it.
const lbIP = "203.0.113.10"

// serveUDP answers every datagram on addr inside ns with "<name>".
func serveUDP(t *testing.T, ns *nstest.NS, name, addr string) {
	var pc net.PacketConn
	if err := ns.Do(func() (err error) { pc, err = net.ListenPacket("udp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte(name), from)
		}
	}()
}

// askUDP sends one datagram on c and returns the answer.
func askUDP(c net.Conn) (string, error) {
	if _, err := c.Write([]byte("?")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string) uint64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var n uint64
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	return 0
}

func TestDatapathInNamespaces(t *testing.T) {
	l := newLab(t)
	serve(t, l.pod1, "pod1", ":8080")
	serve(t, l.pod2, "pod2", ":8080")
	serveUDP(t, l.pod1, "udp-pod1", ":5353")
	serveUDP(t, l.pod2, "udp-pod2", ":5353")

	// A table left by an earlier run, with a rule that would send every
	// service address elsewhere: the first sync must replace it whole.
	if _, err := l.node.Exec(context.Background(), "nft", "add table ip tugboat; add chain ip tugboat stale-from-last-run"); err != nil {
		t.Fatal(err)
	}

	src := newFakeSource()
	web := src.set(svc("web", "ClusterIP", "10.96.0.20", port("", "TCP", 80, 0)), endpointsOf(8080, "TCP", "10.244.1.2", "10.244.1.3"))
	src.set(svc("np", "NodePort", "10.96.0.21", port("", "TCP", 80, 30080)), endpointsOf(8080, "TCP", "10.244.1.3"))
	src.set(svc("empty", "NodePort", "10.96.0.22", port("", "TCP", 80, 30081)), nil)
	src.set(svc("self", "ClusterIP", "10.96.0.23", port("", "TCP", 80, 0)), endpointsOf(8080, "TCP", "10.244.1.2"))
	src.set(svc("emptyudp", "ClusterIP", "10.96.0.24", port("", "UDP", 53, 0)), nil)
	dns := src.set(svc("dns", "ClusterIP", "10.96.0.25", port("", "UDP", 53, 0)), endpointsOf(5353, "UDP", "10.244.1.3"))
	lbDNS := func() *v1.Service {
		s := svc("lbdns", "LoadBalancer", "10.96.0.26", port("", "UDP", 53, 30053))
		s.Status = &v1.ServiceStatus{LoadBalancer: &v1.LoadBalancerStatus{Ingress: []*v1.LoadBalancerIngress{{Ip: lbIP}}}}
		return s
	}
	lbdns := src.set(lbDNS(), endpointsOf(5353, "UDP", "10.244.1.3"))

	reg := prometheus.NewRegistry()
	d, err := New(Config{ClusterCIDR: clusterCIDR, NetNS: l.node.Fd(), Source: src, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			cancel()
			<-done
			stopped = true
		}
	}
	defer stop()
	wait.Eventually(t, 10*time.Second, "the web Service's chain", func() error {
		if out := listTable(t, l.node); !strings.Contains(out, "svc-default/web/tcp/80") {
			return fmt.Errorf("no service chain yet:\n%s", out)
		}
		return nil
	})
	listing := listTable(t, l.node)
	if strings.Contains(listing, "stale-from-last-run") {
		t.Fatalf("full sync left the old table's chain:\n%s", listing)
	}
	// What nft(8) decodes from the kernel is what the rule builder meant.
	for _, key := range src.ServiceKeys() {
		s, _ := src.Service(key)
		e, _ := src.Endpoints(key)
		sps, _ := ServicePorts(s, slicesOf(e), "")
		for _, c := range Build(sps, Options{ClusterCIDR: clusterCIDR}).Chains {
			for _, r := range append([]string{"chain " + c.Name + " {"}, c.Rules()...) {
				if !strings.Contains(listing, r) {
					t.Errorf("listing lacks %q", r)
				}
			}
		}
	}
	for _, want := range []string{
		"10.96.0.20 . tcp . 80 : goto svc-default/web/tcp/80",
		"tcp . 30080 : goto svc-default/np/tcp/80",
		"ip daddr . meta l4proto . th dport @reject-ips goto reject",
		"ct status dnat ip saddr . ip daddr @hairpin masquerade fully-random",
		"meta mark & 0x00004000 == 0x00004000 meta mark set meta mark ^ 0x00004000 masquerade fully-random",
	} {
		if !strings.Contains(listing, want) {
			t.Errorf("listing lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("table:\n%s", listing)
	}

	t.Run("ClusterIP spreads over endpoints; client address kept; hairpin masqueraded", func(t *testing.T) {
		seen := map[string]int{}
		for i := 0; i < 60; i++ {
			got, err := ask(l.pod1, "10.96.0.20:80")
			if err != nil {
				t.Fatal(err)
			}
			seen[got]++
		}
		// pod2 sees pod1's own address (no masquerade between pods); pod1
		// reaching itself sees the bridge address (hairpin masquerade).
		if seen["pod2 10.244.1.2"] == 0 || seen["pod1 10.244.1.1"] == 0 || len(seen) != 2 {
			t.Fatalf("answers %v", seen)
		}
	})
	t.Run("a pod reaches itself through its own Service", func(t *testing.T) {
		got, err := ask(l.pod1, "10.96.0.23:80")
		if err != nil || got != "pod1 10.244.1.1" {
			t.Fatalf("got %q, %v", got, err)
		}
	})
	t.Run("NodePort on every node address; off-node clients masqueraded", func(t *testing.T) {
		for _, c := range []struct {
			from *nstest.NS
			addr string
			want string
		}{
			{l.peer, "192.168.77.1:30080", "pod2 10.244.1.1"},
			{l.pod1, "10.244.1.1:30080", "pod2 10.244.1.2"},
			{l.pod1, "192.168.77.1:30080", "pod2 10.244.1.2"},
		} {
			got, err := ask(c.from, c.addr)
			if err != nil || got != c.want {
				t.Errorf("%s -> %s: got %q, %v; want %q", c.from.Name, c.addr, got, err, c.want)
			}
		}
	})
	t.Run("no endpoints: refused at once", func(t *testing.T) {
		for _, c := range []struct {
			from *nstest.NS
			addr string
		}{{l.pod1, "10.96.0.22:80"}, {l.peer, "192.168.77.1:30081"}} {
			_, err := ask(c.from, c.addr)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("%s -> %s: got %v, want connection refused", c.from.Name, c.addr, err)
			}
		}
		c, err := l.pod1.Dial("udp", "10.96.0.24:53", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := askUDP(c); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("UDP: got %v, want port unreachable (connection refused)", err)
		}
	})
	t.Run("UDP balanced; stale flows cleared when the endpoint leaves", func(t *testing.T) {
		c, err := l.pod1.Dial("udp", "10.96.0.25:53", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got, err := askUDP(c); err != nil || got != "udp-pod2" {
			t.Fatalf("got %q, %v", got, err)
		}
		src.set(svc("dns", "ClusterIP", "10.96.0.25", port("", "UDP", 53, 0)), endpointsOf(5353, "UDP", "10.244.1.2"))
		d.Changed(dns)
		// The same socket (same conntrack flow) must now reach pod1.
		wait.Eventually(t, 10*time.Second, "the UDP flow moved to pod1", func() error {
			got, err := askUDP(c)
			if err != nil || got != "udp-pod1" {
				return fmt.Errorf("got %q, %v", got, err)
			}
			return nil
		})
	})
	t.Run("UDP to a load-balancer address: stale flows cleared when the endpoint leaves", func(t *testing.T) {
		c, err := l.pod1.Dial("udp", lbIP+":53", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if got, err := askUDP(c); err != nil || got != "udp-pod2" {
			t.Fatalf("got %q, %v", got, err)
		}
		src.set(lbDNS(), endpointsOf(5353, "UDP", "10.244.1.2"))
		d.Changed(lbdns)
		// pod2 still answers: only clearing the flow moves this socket.
		wait.Eventually(t, 10*time.Second, "the UDP flow to the load-balancer address moved to pod1", func() error {
			got, err := askUDP(c)
			if err != nil || got != "udp-pod1" {
				return fmt.Errorf("got %q, %v", got, err)
			}
			return nil
		})
	})
	t.Run("endpoint removed: no request reaches it", func(t *testing.T) {
		before := histogramCount(t, reg, "tugboat_proxy_programming_latency_seconds")
		src.set(svc("web", "ClusterIP", "10.96.0.20", port("", "TCP", 80, 0)), endpointsOf(8080, "TCP", "10.244.1.3"))
		d.Changed(web)
		wait.Eventually(t, 10*time.Second, "the change programmed", func() error {
			if histogramCount(t, reg, "tugboat_proxy_programming_latency_seconds") == before {
				return errors.New("change not programmed yet")
			}
			return nil
		})
		for i := 0; i < 30; i++ {
			got, err := ask(l.pod1, "10.96.0.20:80")
			if err != nil || !strings.HasPrefix(got, "pod2 ") {
				t.Fatalf("request %d: got %q, %v", i, got, err)
			}
		}
	})
	t.Run("service deleted: its rules go", func(t *testing.T) {
		src.remove(web)
		d.Changed(web)
		wait.Eventually(t, 10*time.Second, "web gone from the table", func() error {
			if out := listTable(t, l.node); strings.Contains(out, "10.96.0.20") || strings.Contains(out, "svc-default/web/") {
				return fmt.Errorf("web still in the table:\n%s", out)
			}
			return nil
		})
		// The others are untouched.
		if got, err := ask(l.pod1, "10.96.0.23:80"); err != nil || got != "pod1 10.244.1.1" {
			t.Fatalf("self: got %q, %v", got, err)
		}
	})

	stop()
	if ok, err := TableExists("", l.node.Fd()); err != nil || !ok {
		t.Fatalf("the table must outlive Run (rules keep working across a restart): %v %v", ok, err)
	}
	removed, err := Cleanup("", l.node.Fd())
	if err != nil || !removed {
		t.Fatalf("Cleanup: %v %v", removed, err)
	}
	if ok, err := TableExists("", l.node.Fd()); err != nil || ok {
		t.Fatalf("table still there after Cleanup: %v %v", ok, err)
	}
	if removed, err := Cleanup("", l.node.Fd()); err != nil || removed {
		t.Fatalf("second Cleanup: %v %v", removed, err)
	}
}
