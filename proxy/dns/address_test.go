package dns

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// TestPodReachesClusterDNSThroughNode serves the cluster DNS address on
// the node's dummy link and queries it with dig from a pod whose only
// route is its default route to the node, as pods do.
func TestPodReachesClusterDNSThroughNode(t *testing.T) {
	node, pod := nstest.New(t, "dnsnode"), nstest.New(t, "dnspod")
	node.Veth("veth1", pod, "eth0")
	node.AddAddr("veth1", "10.244.1.1/24")
	pod.AddAddr("eth0", "10.244.1.2/24")
	pod.DefaultVia("10.244.1.1")

	ip := netip.MustParseAddr("10.96.0.10")
	// An address of the operator's on lo, to be left alone.
	node.AddAddr("lo", "192.0.2.9/32")
	for range 2 { // idempotent
		if err := EnsureAddress(node.Fd(), ip); err != nil {
			t.Fatal(err)
		}
	}
	z := NewZone("cluster.local")
	z.SetService(svcObj("default", "web", "10.96.0.20", namedPort("http", "TCP", 80)))
	s, err := NewServer(Config{Listen: netip.AddrPortFrom(ip, 53), Zone: z, NetNS: node.Fd()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	defer stop()

	var out string
	wait.Eventually(t, 10*time.Second, "an answer from 10.96.0.10", func() (err error) {
		out, err = pod.Exec(context.Background(), "dig", "@10.96.0.10", "+time=2", "+tries=1", "+noall", "+comments", "+answer", "web.default.svc.cluster.local")
		return err
	})
	mustContain(t, out, "status: NOERROR", "web.default.svc.cluster.local. 5 IN A 10.96.0.20")

	stop()
	removed, err := RemoveAddresses(node.Fd())
	if err != nil || len(removed) != 1 || removed[0] != ip {
		t.Fatalf("RemoveAddresses: %v %v", removed, err)
	}
	lo, err := node.NL.LinkByName("lo")
	if err != nil {
		t.Fatal(err)
	}
	left, err := node.NL.AddrList(lo, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, a := range left {
		have = append(have, a.IPNet.String())
	}
	if len(have) != 2 || have[0] != "127.0.0.1/8" || have[1] != "192.0.2.9/32" {
		t.Fatalf("lo keeps %v, want 127.0.0.1/8 and the operator's 192.0.2.9/32", have)
	}
	if removed, err := RemoveAddresses(node.Fd()); err != nil || len(removed) != 0 {
		t.Fatalf("second RemoveAddresses: %v %v", removed, err)
	}
}
