package manager_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/manager"
)

func TestConfigValidate(t *testing.T) {
	c, _ := client.New(client.Config{Server: "127.0.0.1:1"})
	le := manager.LeaderElection{Enabled: true, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
	cases := []struct {
		name string
		mod  func(*manager.Config)
		want string
	}{
		{"defaults", func(*manager.Config) {}, ""},
		{"no client", func(c *manager.Config) { c.Client = nil }, "--server"},
		{"unknown controller", func(c *manager.Config) { c.Controllers = []string{"*", "-nodeipam", "cronjobs"} }, `--controllers: unknown controller "cronjobs"`},
		{"subset", func(c *manager.Config) { c.Controllers = []string{"replicaset", "garbagecollector"} }, ""},
		{"renew >= lease", func(c *manager.Config) { c.LeaderElection.RenewDeadline = 20 * time.Second }, "--leader-elect-renew-deadline"},
		{"sub-second lease", func(c *manager.Config) { c.LeaderElection.LeaseDuration = 500 * time.Millisecond }, "--leader-elect-lease-duration"},
		{"bad grace", func(c *manager.Config) { c.NodeLifecycle.GracePeriod = -time.Second }, "--node-monitor-grace-period"},
		{"bad cidr", func(c *manager.Config) { c.NodeIPAM.ClusterCIDR = "10.244.0.0/33" }, "--cluster-cidr"},
		{"bad mask", func(c *manager.Config) { c.NodeIPAM.NodeCIDRMaskSize = 8 }, "--node-cidr-mask-size"},
		{"bad rate", func(c *manager.Config) { c.NodeLifecycle.EvictionRate = -1 }, "--node-eviction-rate"},
		{"bad workers", func(c *manager.Config) { c.ReplicaSet.Workers = -1 }, "--concurrent-replicaset-syncs"},
		{"bad metrics address", func(c *manager.Config) { c.MetricsListen = "10257" }, "--metrics-listen"},
	}
	for _, tc := range cases {
		cfg := manager.Config{Client: c, LeaderElection: le}
		tc.mod(&cfg)
		err := cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
}

type replica struct {
	id     string
	client *client.Client
	reg    *prometheus.Registry
	done   chan error
	cancel context.CancelFunc
}

// startReplica runs a controller-manager replica on its own connection,
// so the test can cut it off as if the process died.
func startReplica(t *testing.T, ctx context.Context, addr, id string) *replica {
	c, err := client.New(client.Config{Server: addr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &replica{id: id, client: c, reg: prometheus.NewRegistry(), done: make(chan error, 1), cancel: cancel}
	go func() {
		r.done <- manager.Run(ctx, manager.Config{
			Client: c, Identity: id, Registry: r.reg, Logger: controllertest.Logger().With("replica", id),
			LeaderElection: manager.LeaderElection{Enabled: true, LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond},
		})
	}()
	t.Cleanup(func() { cancel(); <-r.done; c.Close() })
	return r
}

// syncs is how many syncs the replica's controllers have run.
func (r *replica) syncs(t *testing.T) uint64 {
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == "tugboat_controller_manager_sync_duration_seconds" {
			for _, m := range mf.GetMetric() {
				n += histCount(m)
			}
		}
	}
	return n
}

func histCount(m *dto.Metric) uint64 { return m.GetHistogram().GetSampleCount() }

func (r *replica) leader(t *testing.T) float64 {
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "tugboat_controller_manager_leader" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func holder(ctx context.Context, c *client.Client) string {
	l, err := client.For[*v1.Lease](c).Get(ctx, "kube-system", "controller-manager")
	if err != nil {
		return ""
	}
	return l.GetSpec().GetHolderIdentity()
}

// TestOnlyLeaderActsAndHandsOver: of two controller-managers only the
// lease holder runs controllers; when it dies (its connection is cut and
// it never releases the lease) the other takes over and finishes the
// work, every controller included.
func TestOnlyLeaderActsAndHandsOver(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 90*time.Second)
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"}})
	a := startReplica(t, ctx, s.Addr(), "cm-a")
	wait.Eventually(t, 10*time.Second, "cm-a to lead", func() error {
		if holder(ctx, s.Client) == "cm-a" {
			return nil
		}
		return errors.New("lease holder " + holder(ctx, s.Client))
	})
	b := startReplica(t, ctx, s.Addr(), "cm-b")

	rss := client.For[*v1.ReplicaSet](s.Client)
	lbl := map[string]string{"app": "web"}
	if _, err := rss.Create(ctx, &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(3), Selector: &v1.LabelSelector{MatchLabels: lbl},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	waitReady := func(n int32) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, fmt.Sprint(n, " ready replicas of web"), func() error {
			rs, err := rss.Get(ctx, "default", "web")
			if err == nil && rs.GetStatus().GetReadyReplicas() == n && rs.GetStatus().GetReplicas() == n {
				return nil
			}
			return fmt.Errorf("status %v", rs.GetStatus())
		})
	}
	waitReady(3)
	// Both nodes got pod CIDRs: node IPAM runs too.
	wait.Eventually(t, 10*time.Second, "pod CIDRs on both nodes", func() error {
		n1, _ := client.For[*v1.Node](s.Client).Get(ctx, "", "n1")
		n2, _ := client.For[*v1.Node](s.Client).Get(ctx, "", "n2")
		if n1.GetSpec().GetPodCidr() != "" && n2.GetSpec().GetPodCidr() != "" {
			return nil
		}
		return errors.New("nodes without pod CIDRs")
	})
	if a.syncs(t) == 0 || b.syncs(t) != 0 || a.leader(t) != 1 || b.leader(t) != 0 {
		t.Fatalf("while a leads: a ran %d syncs (leader %v), b ran %d (leader %v); want only a", a.syncs(t), a.leader(t), b.syncs(t), b.leader(t))
	}

	// a dies: it can no longer reach the apiserver and never releases the lease.
	a.client.Close()
	if _, err := rss.Mutate(ctx, "default", "web", false, func(rs *v1.ReplicaSet) error {
		rs.Spec.Replicas = proto.Int32(6)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "cm-b to lead", func() error {
		if holder(ctx, s.Client) == "cm-b" {
			return nil
		}
		return errors.New("lease holder " + holder(ctx, s.Client))
	})
	waitReady(6)
	if b.syncs(t) == 0 {
		t.Fatal("b holds the lease but ran no sync")
	}
	select {
	case err := <-a.done:
		if err == nil || !strings.Contains(err.Error(), "leader") {
			t.Errorf("the cut-off replica should stop with a lost-leadership error, got %v", err)
		}
		a.done <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Error("the cut-off replica kept running")
	}

	// The new leader runs every controller: a Deployment rolls out and its
	// deletion is collected.
	deps := client.For[*v1.Deployment](s.Client)
	if _, err := deps.Create(ctx, &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "api", Namespace: "default"},
		Spec: &v1.DeploymentSpec{Replicas: proto.Int32(2), Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "deployment api available", func() error {
		d, err := deps.Get(ctx, "default", "api")
		if err == nil && d.GetStatus().GetAvailableReplicas() == 2 {
			return nil
		}
		return fmt.Errorf("status %v", d.GetStatus())
	})
	if _, err := deps.Delete(ctx, "default", "api", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the pods and ReplicaSets of api collected", func() error {
		pods, _, _ := client.For[*v1.Pod](s.Client).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=api"})
		list, _, _ := rss.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=api"})
		if len(pods) == 0 && len(list) == 0 {
			return nil
		}
		return fmt.Errorf("%d pods, %d replica sets left", len(pods), len(list))
	})
	if _, err := deps.Get(ctx, "default", "api"); !apierrors.IsNotFound(err) {
		t.Fatalf("deployment: %v", err)
	}
}

// TestRunsWithItsOwnCredentials: against a secure apiserver (TLS, RBAC),
// with the controller-manager's certificate and default role, every
// controller works; kinds the role may not list (Secrets, RBAC) are left
// out of garbage collection instead of stalling it.
func TestRunsWithItsOwnCredentials(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := controllertest.Context(t, 60*time.Second)
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"}})
	cm := s.ClientAs("controller-manager")
	cmCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(cmCtx, manager.Config{Client: cm, Identity: "cm", Logger: controllertest.Logger(),
			LeaderElection: manager.LeaderElection{Enabled: true, LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}})
	}()
	t.Cleanup(func() { cancel(); <-done })

	deps := client.For[*v1.Deployment](s.Client)
	if _, err := deps.Create(ctx, &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "api", Namespace: "default"},
		Spec: &v1.DeploymentSpec{Replicas: proto.Int32(2), Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "deployment api available and n1 with a pod CIDR", func() error {
		d, err := deps.Get(ctx, "default", "api")
		n1, _ := client.For[*v1.Node](s.Client).Get(ctx, "", "n1")
		if err == nil && d.GetStatus().GetAvailableReplicas() == 2 && n1.GetSpec().GetPodCidr() != "" {
			return nil
		}
		return fmt.Errorf("deployment status %v, n1 podCIDR %q", d.GetStatus(), n1.GetSpec().GetPodCidr())
	})
	if _, err := deps.Delete(ctx, "default", "api", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the pods and ReplicaSets of api collected", func() error {
		pods, _, _ := client.For[*v1.Pod](s.Client).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=api"})
		list, _, _ := client.For[*v1.ReplicaSet](s.Client).List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=api"})
		if len(pods) == 0 && len(list) == 0 {
			return nil
		}
		return fmt.Errorf("%d pods, %d replica sets left", len(pods), len(list))
	})
}
