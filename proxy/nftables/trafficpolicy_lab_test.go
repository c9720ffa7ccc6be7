package nftables

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// TestExternalTrafficPolicyLocalInNamespaces: the lab's node is "node1"
// to the datapath; pod1 (10.244.1.2) and pod2 (10.244.1.3) run on it, but
// the slices may say an endpoint is on "node2", which makes it remote to
// this node's proxy. The peer host (192.168.77.2) is outside the cluster
// CIDR.
func TestExternalTrafficPolicyLocalInNamespaces(t *testing.T) {
	l := newLab(t)
	serve(t, l.pod1, "pod1", ":8080")
	serve(t, l.pod2, "pod2", ":8080")

	src := newFakeSource()
	src.setSlices(withETP(svc("local", "NodePort", "10.96.0.40", port("", "TCP", 80, 30100)), "Local"),
		nodeSlice([2]string{"10.244.1.2", "node1"}, [2]string{"10.244.1.3", "node2"}))
	src.setSlices(withETP(svc("cluster", "NodePort", "10.96.0.41", port("", "TCP", 80, 30101)), "Cluster"),
		nodeSlice([2]string{"10.244.1.2", "node1"}))
	src.setSlices(withITP(svc("internal", "ClusterIP", "10.96.0.43", port("", "TCP", 80, 0)), "Local"),
		nodeSlice([2]string{"10.244.1.2", "node1"}, [2]string{"10.244.1.3", "node2"}))
	src.setSlices(withITP(svc("internal-elsewhere", "ClusterIP", "10.96.0.44", port("", "TCP", 80, 0)), "Local"),
		nodeSlice([2]string{"10.244.1.3", "node2"}))
	elsewhere := src.setSlices(withETP(svc("elsewhere", "NodePort", "10.96.0.42", port("", "TCP", 80, 30102)), "Local"),
		nodeSlice([2]string{"10.244.1.3", "node2"}))

	d, err := New(Config{ClusterCIDR: clusterCIDR, NodeName: "node1", NetNS: l.node.Fd(), Source: src})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wait.Eventually(t, 10*time.Second, "the external chains", func() error {
		// Not listTable: the table is not there before the first sync.
		out, err := l.node.Exec(context.Background(), "nft", "list", "table", "ip", DefaultTable)
		if err != nil || !strings.Contains(out, "external-default/elsewhere/tcp/80") {
			return fmt.Errorf("no external chain yet: %v\n%s", err, out)
		}
		return nil
	})
	listing := listTable(t, l.node)
	wait.Eventually(t, 10*time.Second, "LocalEndpoints of the first sync", func() error {
		if n, m := d.LocalEndpoints("default/local"), d.LocalEndpoints(elsewhere); n != 1 || m != 0 {
			return fmt.Errorf("local %d (want 1), elsewhere %d (want 0)", n, m)
		}
		return nil
	})
	// What nft(8) decodes is what the rule builder meant.
	for _, key := range src.ServiceKeys() {
		s, _ := src.Service(key)
		sps, _ := ServicePorts(s, src.EndpointSlices(key), "node1")
		for _, c := range Build(sps, Options{ClusterCIDR: clusterCIDR}).Chains {
			for _, r := range append([]string{"chain " + c.Name + " {"}, c.Rules()...) {
				if !strings.Contains(listing, r) {
					t.Errorf("listing lacks %q", r)
				}
			}
		}
	}
	if t.Failed() {
		t.Fatalf("table:\n%s", listing)
	}

	expect := func(t *testing.T, from *nstest.NS, addr string, want ...string) {
		t.Helper()
		for i := 0; i < 12; i++ {
			got, err := ask(from, addr)
			if err != nil {
				t.Fatalf("%s -> %s: %v", from.Name, addr, err)
			}
			ok := false
			for _, w := range want {
				ok = ok || got == w
			}
			if !ok {
				t.Fatalf("%s -> %s: got %q, want one of %q", from.Name, addr, got, want)
			}
		}
	}
	dropped := func(t *testing.T, from *nstest.NS, addr string) {
		t.Helper()
		c, err := from.Dial("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			t.Fatalf("%s -> %s: connected, want the SYN dropped", from.Name, addr)
		}
		if !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("%s -> %s: %v, want a timeout (dropped, not refused)", from.Name, addr, err)
		}
	}

	t.Run("Local: an outside client reaches only the local endpoint, with its own address", func(t *testing.T) {
		expect(t, l.peer, nstest.NodeIP+":30100", "pod1 "+nstest.PeerIP)
	})
	t.Run("Cluster: the same client is masqueraded to the node's address", func(t *testing.T) {
		expect(t, l.peer, nstest.NodeIP+":30101", "pod1 "+nstest.BridgeIP)
	})
	t.Run("Local: pods keep the cluster-wide behaviour", func(t *testing.T) {
		seen := map[string]int{}
		for i := 0; i < 40; i++ {
			got, err := ask(l.pod2, nstest.NodeIP+":30100")
			if err != nil {
				t.Fatal(err)
			}
			seen[got]++
		}
		// pod1 sees pod2's own address; pod2 reaching itself is hairpin-masqueraded.
		if seen["pod1 10.244.1.3"] == 0 || seen["pod2 10.244.1.1"] == 0 || len(seen) != 2 {
			t.Fatalf("answers %v", seen)
		}
	})
	t.Run("Local without a local endpoint: outside clients dropped, pods and the ClusterIP served", func(t *testing.T) {
		dropped(t, l.peer, nstest.NodeIP+":30102")
		expect(t, l.pod1, nstest.NodeIP+":30102", "pod2 10.244.1.2")
		expect(t, l.pod1, "10.96.0.42:80", "pod2 10.244.1.2")
	})
	t.Run("the node itself reaches a Local nodePort cluster-wide", func(t *testing.T) {
		expect(t, l.node, nstest.NodeIP+":30102", "pod2 "+nstest.BridgeIP)
	})
	t.Run("internalTrafficPolicy Local: the ClusterIP reaches only the local endpoint, or drops", func(t *testing.T) {
		expect(t, l.pod2, "10.96.0.43:80", "pod1 10.244.1.3")
		dropped(t, l.pod1, "10.96.0.44:80")
	})
	t.Run("incremental: the endpoint moves to this node, then away again", func(t *testing.T) {
		src.setSlices(withETP(svc("elsewhere", "NodePort", "10.96.0.42", port("", "TCP", 80, 30102)), "Local"),
			nodeSlice([2]string{"10.244.1.3", "node1"}))
		// The count the health check answers with is what is programmed,
		// not what the source says: still 0 until the datapath syncs.
		if n := d.LocalEndpoints(elsewhere); n != 0 {
			t.Fatalf("LocalEndpoints(%s) = %d before the change was programmed, want 0", elsewhere, n)
		}
		d.Changed(elsewhere)
		wait.Eventually(t, 10*time.Second, "LocalEndpoints 1 once programmed", func() error {
			if n := d.LocalEndpoints(elsewhere); n != 1 {
				return fmt.Errorf("LocalEndpoints = %d", n)
			}
			return nil
		})
		// Once it says 1, the outside client is served at once.
		if got, err := ask(l.peer, nstest.NodeIP+":30102"); err != nil || got != "pod2 "+nstest.PeerIP {
			t.Fatalf("right after LocalEndpoints turned 1: got %q, %v", got, err)
		}
		src.setSlices(withETP(svc("elsewhere", "NodePort", "10.96.0.42", port("", "TCP", 80, 30102)), "Cluster"),
			nodeSlice([2]string{"10.244.1.3", "node2"}))
		d.Changed(elsewhere)
		wait.Eventually(t, 10*time.Second, "Cluster again: the outside client masqueraded", func() error {
			got, err := ask(l.peer, nstest.NodeIP+":30102")
			if err != nil || got != "pod2 "+nstest.BridgeIP {
				return fmt.Errorf("got %q, %v", got, err)
			}
			return nil
		})
		// The count is stored once the sync that put the rules in the
		// kernel is done, a moment after the rules already serve.
		wait.Eventually(t, 10*time.Second, "LocalEndpoints 0 under Cluster (no external chain)", func() error {
			if n := d.LocalEndpoints(elsewhere); n != 0 {
				return fmt.Errorf("LocalEndpoints(%s) = %d", elsewhere, n)
			}
			return nil
		})
		if out := listTable(t, l.node); strings.Contains(out, "external-default/elsewhere/") {
			t.Fatalf("the external chain is left:\n%s", out)
		}
	})
}
