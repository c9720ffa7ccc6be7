package leaderelection_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/leaderelection"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// slowProxy forwards loopback TCP connections to target, holding every
// chunk from the client for delay while delay is set: an apiserver that
// answers each call late, as an overloaded one does.
type slowProxy struct {
	lis   net.Listener
	delay atomic.Int64 // nanoseconds
}

func newSlowProxy(t *testing.T, target string) *slowProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{lis: lis}
	var wg sync.WaitGroup
	t.Cleanup(func() { lis.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(c, s); c.Close() }()
			go func() { defer wg.Done(); p.forward(s, c); s.Close() }()
		}
	}()
	return p
}

// forward copies from src to dst, each chunk sent delay after it was read
// (chunks keep their order).
func (p *slowProxy) forward(dst, src net.Conn) {
	type chunk struct {
		at time.Time
		b  []byte
	}
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			b := make([]byte, 32<<10)
			n, err := src.Read(b)
			if n > 0 {
				ch <- chunk{time.Now().Add(time.Duration(p.delay.Load())), b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			return
		}
	}
}

func (p *slowProxy) addr() string { return p.lis.Addr().String() }

func config(identity string) leaderelection.Config {
	return leaderelection.Config{Name: "test-component", Identity: identity,
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond}
}

// lead runs a candidate in the background; leading is closed when it
// leads, and Run's error arrives on done.
func lead(ctx context.Context, c *client.Client, cfg leaderelection.Config) (leading chan struct{}, lost *atomic.Bool, done chan error) {
	leading, lost, done = make(chan struct{}), &atomic.Bool{}, make(chan error, 1)
	go func() {
		done <- leaderelection.Run(ctx, c, cfg, func(ctx context.Context) {
			close(leading)
			<-ctx.Done()
			lost.Store(true)
		})
	}()
	return leading, lost, done
}

// Every call answered 500 ms late, for several renew deadlines: longer than
// RetryPeriod, and a Get plus an Update would take 1 s, but one Update
// fits in RenewDeadline (2 s). The leader renews through its optimistic
// Update, as client-go's does, and keeps leading; the lease's renewTime
// moves on.
func TestLeaderKeepsLeaseWhenAnswersAreLate(t *testing.T) {
	s := apiservertest.Start(t)
	p := newSlowProxy(t, s.Addr())
	c, err := client.New(client.Config{Server: p.addr(), UserAgent: "leaderelection-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leading, lost, done := lead(ctx, c, config("a"))
	select {
	case <-leading:
	case err := <-done:
		t.Fatalf("Run returned before leading: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not leading after 30s")
	}
	leases := client.For[*v1.Lease](s.Client)
	before, err := leases.Get(ctx, "kube-system", "test-component")
	if err != nil {
		t.Fatal(err)
	}
	slowFrom := time.Now()
	p.delay.Store(int64(500 * time.Millisecond))
	// Renewals go on for three renew deadlines of late answers.
	var after *v1.Lease
	wait.Eventually(t, 60*time.Second, "a renewal written 6s into the late answers", func() error {
		if lost.Load() {
			return nil // reported below
		}
		var err error
		after, err = leases.Get(ctx, "kube-system", "test-component")
		if err != nil {
			return err
		}
		if rt := after.GetSpec().GetRenewTime().AsTime(); rt.Before(slowFrom.Add(6 * time.Second)) {
			return fmt.Errorf("last renewal %s after the answers became late", rt.Sub(slowFrom).Round(time.Millisecond))
		}
		return nil
	})
	p.delay.Store(0)
	if lost.Load() {
		t.Fatalf("leadership lost while every call was answered within RenewDeadline: %v", <-done)
	}
	if h := after.GetSpec().GetHolderIdentity(); h != "a" {
		t.Fatalf("holder %q, want a", h)
	}
	if !after.GetSpec().GetRenewTime().AsTime().After(before.GetSpec().GetRenewTime().AsTime()) {
		t.Fatalf("renewTime did not move: %v then %v", before.GetSpec().GetRenewTime().AsTime(), after.GetSpec().GetRenewTime().AsTime())
	}
	if tr := after.GetSpec().GetLeaseTransitions(); tr != before.GetSpec().GetLeaseTransitions() {
		t.Fatalf("leaseTransitions %d -> %d: the lease changed hands", before.GetSpec().GetLeaseTransitions(), tr)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
}

// A lease taken over behind the leader's back (another holder, freshly
// renewed) makes the optimistic Update conflict; the leader reads the
// lease, sees it held and stops leading within RenewDeadline, and Run says
// so. A standby then acquires the lease once the usurper stops renewing.
func TestLeaderStopsWhenLeaseIsTaken(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leading, lost, done := lead(ctx, s.Client, config("a"))
	select {
	case <-leading:
	case <-time.After(30 * time.Second):
		t.Fatal("not leading after 30s")
	}
	leases := client.For[*v1.Lease](s.Client)
	wait.Eventually(t, 10*time.Second, "the lease handed to z", func() error {
		cur, err := leases.Get(ctx, "kube-system", "test-component")
		if err != nil {
			return err
		}
		cur.Spec.HolderIdentity, cur.Spec.RenewTime = "z", timestamppb.Now()
		_, err = leases.Update(ctx, cur)
		return err
	})
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("still leading 30s after the lease was taken")
	}
	if err == nil || !lost.Load() {
		t.Fatalf("Run returned %v, lead's context ended: %v; want leadership lost", err, lost.Load())
	}
	// z never renews: b acquires once z's lease has expired.
	bLeading, _, _ := lead(ctx, s.Client, config("b"))
	select {
	case <-bLeading:
	case <-time.After(30 * time.Second):
		t.Fatal("b did not acquire the expired lease")
	}
	cur, err := leases.Get(ctx, "kube-system", "test-component")
	if err != nil {
		t.Fatal(err)
	}
	if cur.GetSpec().GetHolderIdentity() != "b" || cur.GetSpec().GetLeaseTransitions() < 1 {
		t.Fatalf("lease %v, want held by b after a transition", cur.GetSpec())
	}
}
