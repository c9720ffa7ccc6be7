package nftables

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/wait"
)

// TestLookup reads back, from the kernel, what a synced table does with
// each ClusterIP port: forward (with the endpoint count), reject, missing;
// and says so plainly when the table does not exist.
func TestLookup(t *testing.T) {
	l := newLab(t)
	keys := []IPPortKey{
		{IP: netip.MustParseAddr("10.96.0.20"), Protocol: TCP, Port: 80},
		{IP: netip.MustParseAddr("10.96.0.21"), Protocol: TCP, Port: 80},
		{IP: netip.MustParseAddr("10.96.0.22"), Protocol: TCP, Port: 80},
		{IP: netip.MustParseAddr("10.96.0.99"), Protocol: TCP, Port: 80},
		{IP: netip.MustParseAddr("10.96.0.20"), Protocol: UDP, Port: 80},
	}
	if _, err := Lookup("", l.node.Fd(), keys); !errors.Is(err, ErrNoTable) {
		t.Fatalf("Lookup without a table: %v, want ErrNoTable", err)
	}
	src := newFakeSource()
	src.set(svc("web", "ClusterIP", "10.96.0.20", port("", "TCP", 80, 0)), endpointsOf(8080, "TCP", "10.244.1.2", "10.244.1.3", "10.244.1.4"))
	src.set(svc("one", "ClusterIP", "10.96.0.21", port("", "TCP", 80, 0)), endpointsOf(8080, "TCP", "10.244.1.2"))
	src.set(svc("empty", "ClusterIP", "10.96.0.22", port("", "TCP", 80, 0)), nil)
	reg := prometheus.NewRegistry()
	d, err := New(Config{ClusterCIDR: clusterCIDR, NetNS: l.node.Fd(), Source: src, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	want := []Rule{
		{Key: keys[0], Verdict: VerdictForward, Chain: "svc-default/web/tcp/80", Endpoints: 3},
		{Key: keys[1], Verdict: VerdictForward, Chain: "svc-default/one/tcp/80", Endpoints: 1},
		{Key: keys[2], Verdict: VerdictReject},
		{Key: keys[3], Verdict: VerdictMissing},
		{Key: keys[4], Verdict: VerdictMissing},
	}
	wait.Eventually(t, 10*time.Second, "Lookup's verdicts", func() error {
		got, err := Lookup("", l.node.Fd(), keys)
		if err != nil {
			return err
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			return fmt.Errorf("Lookup:\n got %v\nwant %v", got, want)
		}
		return nil
	})
	// The Service without endpoints is counted (once the sync that made
	// the rules has been recorded: the kernel can show them first).
	wait.Eventually(t, 10*time.Second, "the Service without endpoints counted", func() error {
		if n := gaugeValue(t, reg, "tugboat_proxy_service_ports_without_endpoints"); n != 1 {
			return fmt.Errorf("tugboat_proxy_service_ports_without_endpoints = %v, want 1", n)
		}
		return nil
	})
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}
