package nodeipam_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/nodeipam"
)

// observer checks, at every change of every node, that no two nodes hold
// the same pod CIDR.
type observer struct {
	mu    sync.Mutex
	cidrs map[string]string // node -> cidr
	dups  []string
}

func observe(ctx context.Context, t *testing.T, c *client.Client) *observer {
	o := &observer{cidrs: map[string]string{}}
	inf := informer.New(client.For[*v1.Node](c), informer.Options{Logger: controllertest.Logger()})
	set := func(n *v1.Node) {
		o.mu.Lock()
		defer o.mu.Unlock()
		name, cidr := n.Metadata.Name, n.GetSpec().GetPodCidr()
		o.cidrs[name] = cidr
		if cidr == "" {
			return
		}
		for other, c := range o.cidrs {
			if c == cidr && other != name {
				o.dups = append(o.dups, fmt.Sprintf("%s: %s and %s", cidr, name, other))
			}
		}
	}
	inf.AddHandler(informer.Handler[*v1.Node]{OnAdd: set, OnUpdate: func(_, n *v1.Node) { set(n) }, OnDelete: func(n *v1.Node) {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.cidrs, n.Metadata.Name)
	}})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	inf.WaitForSync(ctx)
	return o
}

// snapshot returns node -> cidr and fails the test on any duplicate seen.
func (o *observer) snapshot(t *testing.T) map[string]string {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.dups) > 0 {
		t.Fatalf("duplicate pod CIDRs observed: %v", o.dups)
	}
	out := map[string]string{}
	for k, v := range o.cidrs {
		out[k] = v
	}
	return out
}

func runIPAM(t *testing.T, ctx context.Context, c *client.Client) context.CancelFunc {
	ctx, cancel := context.WithCancel(ctx)
	d := controllertest.Deps(ctx, c)
	ipam, err := nodeipam.New(d, nodeipam.Config{ClusterCIDR: "10.244.0.0/16", NodeCIDRMaskSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ipam)
	return cancel
}

func createNodes(t *testing.T, ctx context.Context, nodes *client.Typed[*v1.Node], names []string) {
	var g errgroup.Group
	g.SetLimit(32)
	for _, n := range names {
		g.Go(func() error {
			_, err := nodes.Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: n}})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
}

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s%03d", prefix, i))
	}
	return out
}

func waitAssigned(t *testing.T, o *observer, want []string) map[string]string {
	t.Helper()
	var snap map[string]string
	wait.Eventually(t, 30*time.Second, "a pod CIDR on every node", func() error {
		snap = o.snapshot(t)
		missing := 0
		for _, n := range want {
			if snap[n] == "" {
				missing++
			}
		}
		if missing == 0 {
			return nil
		}
		return fmt.Errorf("%d of %d nodes without a pod CIDR", missing, len(want))
	})
	return snap
}

// TestUniqueCIDRs: 200 nodes created concurrently get distinct /24s of
// 10.244.0.0/16; a CIDR is reused only after its node is deleted; a
// restarted controller rebuilds its map first and never hands out a CIDR
// in use; a node that finds the range full gets one when a node goes.
func TestUniqueCIDRs(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 120*time.Second)
	nodes := client.For[*v1.Node](s.Client)
	o := observe(ctx, t, s.Client)
	stop := runIPAM(t, ctx, s.Client)

	first := names("a", 0, 200)
	createNodes(t, ctx, nodes, first)
	snap := waitAssigned(t, o, first)
	for _, n := range first[:3] {
		node, _ := nodes.Get(ctx, "", n)
		if len(node.Spec.PodCidrs) != 1 || node.Spec.PodCidrs[0] != node.Spec.PodCidr {
			t.Fatalf("node %s: podCIDR %q podCIDRs %v", n, node.Spec.PodCidr, node.Spec.PodCidrs)
		}
	}

	// Delete 50; 100 new nodes need more than the 56 never-used /24s, so
	// some get released ones, and only released ones.
	released := map[string]bool{}
	for _, n := range first[:50] {
		released[snap[n]] = true
		if _, err := nodes.Delete(ctx, "", n, client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	live := map[string]bool{}
	for _, n := range first[50:] {
		live[snap[n]] = true
	}
	second := names("b", 0, 100)
	createNodes(t, ctx, nodes, second)
	snap = waitAssigned(t, o, second)
	reused := 0
	for _, n := range second {
		if live[snap[n]] {
			t.Fatalf("node %s got %s, which node of the first batch still holds", n, snap[n])
		}
		if released[snap[n]] {
			reused++
		}
	}
	if reused != 100-56 {
		t.Errorf("%d released CIDRs reused, want %d (the never-used ones first)", reused, 100-56)
	}

	// Restart; create 7 more while it is down: 6 CIDRs are left.
	stop()
	third := names("c", 0, 7)
	createNodes(t, ctx, nodes, third)
	runIPAM(t, ctx, s.Client)
	wait.Eventually(t, 30*time.Second, "all but one of the third batch with a CIDR", func() error {
		snap = o.snapshot(t)
		without := []string{}
		for _, n := range third {
			if snap[n] == "" {
				without = append(without, n)
			}
		}
		if len(without) == 1 {
			return nil
		}
		return fmt.Errorf("nodes without a CIDR: %v (want exactly one)", without)
	})
	wait.Eventually(t, 10*time.Second, "a CIDRNotAvailable event", func() error {
		evs, _, _ := client.For[*v1.Event](s.Client).List(ctx, client.ListOptions{Namespace: "default"})
		for _, e := range evs {
			if e.Reason == "CIDRNotAvailable" {
				return nil
			}
		}
		return errors.New("no CIDRNotAvailable event")
	})
	if _, err := nodes.Delete(ctx, "", first[199], client.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitAssigned(t, o, third)
	if got := len(o.snapshot(t)); got != 256 {
		t.Errorf("%d nodes, want 256 (the whole range)", got)
	}
}
