package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

type fakeRuntime struct {
	mu   sync.Mutex
	down error
}

func (f *fakeRuntime) Version(context.Context) (runtime.VersionInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down != nil {
		return runtime.VersionInfo{}, f.down
	}
	return runtime.VersionInfo{RuntimeName: "containerd", RuntimeVersion: "1.6.20"}, nil
}

func (f *fakeRuntime) ListImages(context.Context) ([]runtime.ImageStatus, error) {
	return []runtime.ImageStatus{{Ref: "tugboat.local/busybox:latest", ID: "sha256:b", Size: 1000}}, nil
}

func (f *fakeRuntime) set(err error) { f.mu.Lock(); f.down = err; f.mu.Unlock() }

type netState struct {
	mu  sync.Mutex
	err error
}

func (n *netState) check(context.Context) error { n.mu.Lock(); defer n.mu.Unlock(); return n.err }
func (n *netState) set(err error)               { n.mu.Lock(); n.err = err; n.mu.Unlock() }

// waitCondition waits for node's condition typ to have status, reason
// (unless empty) and a message containing each of msgs.
func waitCondition(t *testing.T, c *client.Client, node, typ, status, reason string, msgs ...string) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, fmt.Sprintf("%s %s %s %q", typ, status, reason, msgs), func() error {
		cond, err := readCondition(c, node, typ)
		if err != nil {
			return err
		}
		if cond.GetStatus() != status || reason != "" && cond.GetReason() != reason {
			return fmt.Errorf("%s is %v", typ, cond)
		}
		for _, m := range msgs {
			if !strings.Contains(cond.GetMessage(), m) {
				return fmt.Errorf("%s is %v, without %q", typ, cond, m)
			}
		}
		return nil
	})
}

// readCondition reads node's condition typ (nil if it has none).
func readCondition(c *client.Client, node, typ string) (*v1.Condition, error) {
	n, err := client.For[*v1.Node](c).Get(context.Background(), "", node)
	if err != nil {
		return nil, err
	}
	for _, cond := range n.GetStatus().GetConditions() {
		if cond.Type == typ {
			return cond, nil
		}
	}
	return nil, nil
}

func TestRegisterLeaseAndConditions(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt := &fakeRuntime{}
	net := &netState{}
	a, err := New(Config{
		NodeName: "n1", NodeIP: netip.MustParseAddr("10.123.0.11"), Memory: "8Gi", MaxPods: 30,
		LeaseInterval: 100 * time.Millisecond, StatusInterval: 100 * time.Millisecond,
		KubeletVersion: "v0.1.0", RootDir: t.TempDir(), PodCIDR: "10.244.7.0/24",
	}, s.Client, rt, net.check)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	cidr, err := a.PodCIDR(ctx)
	if err != nil || cidr != "10.244.7.0/24" {
		t.Fatalf("PodCIDR = %q, %v", cidr, err)
	}
	<-a.Registered()
	node, err := client.For[*v1.Node](s.Client).Get(ctx, "", "n1")
	if err != nil {
		t.Fatal(err)
	}
	st := node.GetStatus()
	if st.Capacity["memory"] != "8Gi" || st.Capacity["pods"] != "30" || st.Capacity["cpu"] == "" || st.Allocatable["memory"] != "8Gi" ||
		!strings.HasSuffix(st.Capacity["ephemeral-storage"], "Ki") || st.Allocatable["ephemeral-storage"] != st.Capacity["ephemeral-storage"] {
		t.Errorf("capacity %v allocatable %v", st.Capacity, st.Allocatable)
	}
	// --pod-cidr is the kubelet's own: the Node's spec.podCIDR is not the
	// node's to set (the apiserver's node restriction).
	if node.Spec.GetPodCidr() != "" || node.Metadata.Labels["kubernetes.io/hostname"] != "n1" {
		t.Errorf("spec %v labels %v", node.Spec, node.Metadata.Labels)
	}
	if st.Addresses[0].Type != "InternalIP" || st.Addresses[0].Address != "10.123.0.11" {
		t.Errorf("addresses %v", st.Addresses)
	}
	info := st.NodeInfo
	if info.ContainerRuntimeVersion != "containerd://1.6.20" || info.KubeletVersion != "v0.1.0" || info.KernelVersion == "" || info.OperatingSystem != "linux" {
		t.Errorf("nodeInfo %v", info)
	}
	if len(st.Images) != 1 || st.Images[0].Names[0] != "tugboat.local/busybox:latest" {
		t.Errorf("images %v", st.Images)
	}
	if c, err := readCondition(s.Client, "n1", "Ready"); err != nil || c.GetStatus() != "True" || c.GetReason() != "KubeletReady" {
		t.Fatalf("Ready %v, %v", c, err)
	}

	// The lease is renewed.
	leases := client.For[*v1.Lease](s.Client)
	var first time.Time
	wait.Eventually(t, 10*time.Second, "the lease", func() error {
		l, err := leases.Get(ctx, LeaseNamespace, "n1")
		if err != nil {
			return err
		}
		first = l.Spec.RenewTime.AsTime()
		if l.Spec.HolderIdentity != "n1" || l.Spec.LeaseDurationSeconds < 1 {
			return fmt.Errorf("lease spec %v", l.Spec)
		}
		return nil
	})
	wait.Eventually(t, 10*time.Second, "a renewal", func() error {
		l, err := leases.Get(ctx, LeaseNamespace, "n1")
		if err != nil {
			return err
		}
		if !l.Spec.RenewTime.AsTime().After(first) {
			return fmt.Errorf("renewed at %v, as first seen", l.Spec.RenewTime.AsTime())
		}
		return nil
	})

	// Renewals update the lease last written without reading it first:
	// ten more renewals, no more Gets of it.
	gets := func() float64 {
		mfs, err := s.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, mf := range mfs {
			if mf.GetName() != "tugboat_apiserver_requests_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				lbl := map[string]string{}
				for _, lp := range m.GetLabel() {
					lbl[lp.GetName()] = lp.GetValue()
				}
				if lbl["kind"] == "Lease" && lbl["verb"] == "Get" {
					sum += m.GetCounter().GetValue()
				}
			}
		}
		return sum
	}
	own := 0 // the test's own Gets of the lease
	renewedAt := func() time.Time {
		own++
		l, err := leases.Get(ctx, LeaseNamespace, "n1")
		if err != nil {
			t.Fatal(err)
		}
		return l.Spec.RenewTime.AsTime()
	}
	before, from := gets(), renewedAt()
	wait.Eventually(t, 30*time.Second, "ten renewals", func() error {
		if d := renewedAt().Sub(from); d < 10*100*time.Millisecond {
			return fmt.Errorf("renewed %s after", d)
		}
		return nil
	})
	if agent := gets() - before - float64(own); agent != 0 {
		t.Fatalf("the agent read its lease %v times over ten renewals, want 0 (it updates the lease it last wrote)", agent)
	}
	// A lease changed behind the agent's back (its version moved): the
	// renewal's compare-and-swap conflicts, the agent reads the lease
	// again and renews it.
	l, err := leases.Get(ctx, LeaseNamespace, "n1")
	if err != nil {
		t.Fatal(err)
	}
	l.Metadata.Labels = map[string]string{"touched": "yes"}
	if l, err = leases.Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	touched := l.Spec.RenewTime.AsTime()
	wait.Eventually(t, 10*time.Second, "a renewal of the changed lease", func() error {
		l, err := leases.Get(ctx, LeaseNamespace, "n1")
		if err != nil {
			return err
		}
		if !l.Spec.RenewTime.AsTime().After(touched) || l.Metadata.Labels["touched"] != "yes" {
			return fmt.Errorf("renewTime %v, labels %v", l.Spec.RenewTime.AsTime(), l.Metadata.Labels)
		}
		return nil
	})

	// Network broken: NotReady with NetworkPluginNotReady and the reason.
	net.set(errors.New("no CNI network config in /etc/cni/net.d"))
	waitCondition(t, s.Client, "n1", "Ready", "False", "", "NetworkPluginNotReady", "no CNI network config")
	net.set(nil)
	waitCondition(t, s.Client, "n1", "Ready", "True", "")

	// Runtime down: ContainerRuntimeNotReady.
	rt.set(errors.New("connection refused"))
	waitCondition(t, s.Client, "n1", "Ready", "False", "ContainerRuntimeNotReady", "connection refused")
	rt.set(nil)
	waitCondition(t, s.Client, "n1", "Ready", "True", "")
}

// TestPodCIDRFromSpec: without --pod-cidr the agent waits for the node
// IPAM controller to set spec.podCIDR.
func TestPodCIDRFromSpec(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := New(Config{NodeName: "n2", NodeIP: netip.MustParseAddr("10.123.0.12"), StatusInterval: 50 * time.Millisecond},
		s.Client, &fakeRuntime{}, func(context.Context) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-a.Registered()
	if a.CurrentPodCIDR() != "" {
		t.Fatal("pod CIDR known before anyone set it")
	}
	if _, err := client.For[*v1.Node](s.Client).Mutate(ctx, "", "n2", false, func(n *v1.Node) error {
		n.Spec.PodCidr = "10.244.9.0/24"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	cidr, err := a.PodCIDR(wctx)
	if err != nil || cidr != "10.244.9.0/24" {
		t.Fatalf("PodCIDR = %q, %v", cidr, err)
	}
}

func TestValidate(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.1")
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{NodeIP: ip}, "--node-name"},
		{Config{NodeName: "n"}, "--node-ip"},
		{Config{NodeName: "n", NodeIP: ip, CPU: "lots"}, "--cpu"},
		{Config{NodeName: "n", NodeIP: ip, Memory: "-1Gi"}, "--memory"},
		{Config{NodeName: "n", NodeIP: ip, PodCIDR: "10.244.1.5/24"}, "--pod-cidr"},
		{Config{NodeName: "n", NodeIP: ip, MaxPods: -1}, "--max-pods"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if err := (Config{NodeName: "n", NodeIP: ip, CPU: "1500m", Memory: "2Gi", PodCIDR: "10.244.1.0/24"}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// TestRefresh: a change the kubelet knows of (the network became ready)
// reaches the Ready condition at once on Refresh, not at the next
// interval (an hour here).
func TestRefresh(t *testing.T) {
	s := apiservertest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	net := &netState{err: errors.New("waiting for the node's pod CIDR")}
	a, err := New(Config{
		NodeName: "n1", NodeIP: netip.MustParseAddr("10.123.0.11"), LeaseInterval: time.Hour, StatusInterval: time.Hour,
		KubeletVersion: "v0.1.0", RootDir: t.TempDir(), PodCIDR: "10.244.7.0/24",
	}, s.Client, &fakeRuntime{}, net.check)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-a.Registered()
	waitCondition(t, s.Client, "n1", "Ready", "False", "") // at registration
	net.set(nil)
	a.Refresh()
	a.Refresh() // a second one while the first is pending does not block
	waitCondition(t, s.Client, "n1", "Ready", "True", "")
}
