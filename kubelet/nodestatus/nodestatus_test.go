package nodestatus

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
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

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readyCondition(t *testing.T, c *client.Client, name string) *v1.Condition {
	n, err := client.For[*v1.Node](c).Get(context.Background(), "", name)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range n.GetStatus().GetConditions() {
		if cond.Type == "Ready" {
			return cond
		}
	}
	return nil
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
	if st.Capacity["memory"] != "8Gi" || st.Capacity["pods"] != "30" || st.Capacity["cpu"] == "" || st.Allocatable["memory"] != "8Gi" {
		t.Errorf("capacity %v allocatable %v", st.Capacity, st.Allocatable)
	}
	if node.Spec.GetPodCidr() != "10.244.7.0/24" || node.Metadata.Labels["kubernetes.io/hostname"] != "n1" {
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
	if c := readyCondition(t, s.Client, "n1"); c.Status != "True" || c.Reason != "KubeletReady" {
		t.Fatalf("Ready %v", c)
	}

	// The lease is renewed.
	leases := client.For[*v1.Lease](s.Client)
	var first time.Time
	waitFor(t, "the lease", func() bool {
		l, err := leases.Get(ctx, LeaseNamespace, "n1")
		if err != nil {
			return false
		}
		first = l.Spec.RenewTime.AsTime()
		return l.Spec.HolderIdentity == "n1" && l.Spec.LeaseDurationSeconds >= 1
	})
	waitFor(t, "a renewal", func() bool {
		l, err := leases.Get(ctx, LeaseNamespace, "n1")
		return err == nil && l.Spec.RenewTime.AsTime().After(first)
	})

	// Network broken: NotReady with NetworkPluginNotReady and the reason.
	net.set(errors.New("no CNI network config in /etc/cni/net.d"))
	waitFor(t, "NetworkPluginNotReady", func() bool {
		c := readyCondition(t, s.Client, "n1")
		return c.Status == "False" && strings.Contains(c.Message, "NetworkPluginNotReady") && strings.Contains(c.Message, "no CNI network config")
	})
	net.set(nil)
	waitFor(t, "Ready again", func() bool { return readyCondition(t, s.Client, "n1").Status == "True" })

	// Runtime down: ContainerRuntimeNotReady.
	rt.set(errors.New("connection refused"))
	waitFor(t, "ContainerRuntimeNotReady", func() bool {
		c := readyCondition(t, s.Client, "n1")
		return c.Status == "False" && c.Reason == "ContainerRuntimeNotReady" && strings.Contains(c.Message, "connection refused")
	})
	rt.set(nil)
	waitFor(t, "Ready after the runtime is back", func() bool { return readyCondition(t, s.Client, "n1").Status == "True" })
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
	waitFor(t, "NotReady at registration", func() bool { return readyCondition(t, s.Client, "n1").GetStatus() == "False" })
	net.set(nil)
	a.Refresh()
	a.Refresh() // a second one while the first is pending does not block
	waitFor(t, "Ready after Refresh", func() bool { return readyCondition(t, s.Client, "n1").GetStatus() == "True" })
}
