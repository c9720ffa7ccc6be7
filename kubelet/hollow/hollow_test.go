package hollow_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/manager"
	"github.com/tugboat/tugboat/kubelet/hollow"
	"github.com/tugboat/tugboat/scheduler"
)

// TestHollowNodes runs 200 hollow nodes against a real control plane
// (apiserver on embedded etcd, scheduler, controller-manager, all with
// their own certificates, RBAC and the node authorizer on) and 2,000 pods
// of ten Deployments (ordinary pods: the ServiceAccount admission gives
// each the projected kube-api-access-* volume, so every node requests a
// bound token per pod and reads kube-root-ca.crt): every node registers,
// gets a pod CIDR and is Ready, every pod runs with an address of its node's pod CIDR, the nodes'
// Leases are renewed, and deleting the Deployments removes every pod.
func TestHollowNodes(t *testing.T) {
	const (
		nodes       = 200
		deployments = 10
		replicas    = 200
	)
	s := apiservertest.StartSecure(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := controllertest.Logger()

	// The cluster CA published as kube-root-ca.crt, as the
	// controller-manager binary does by default (--root-ca-file defaults
	// to --ca-file): the pods' kube-api-access-* volume projects it, and
	// without it no pod starts (the configMap source is not optional).
	rootCA, err := os.ReadFile(filepath.Join(s.PKIDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	cmCfg := manager.Config{Client: s.ClientAs("controller-manager"), Identity: "cm", Registry: prometheus.NewRegistry(), Logger: log}
	cmCfg.RootCACertPublisher.RootCA = rootCA
	cmDone := make(chan error, 1)
	go func() { cmDone <- manager.Run(ctx, cmCfg) }()
	sched, err := scheduler.New(s.ClientAs("scheduler"), scheduler.Config{Logger: log, Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	schedDone := make(chan error, 1)
	go func() { schedDone <- sched.Run(ctx) }()

	ca, err := pki.LoadCA(filepath.Join(s.PKIDir, "ca.crt"), filepath.Join(s.PKIDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	cfg := hollow.Config{Nodes: nodes, Server: s.Addr(), TLS: hollow.IssueFrom(ca, roots), RootDir: t.TempDir(), Logger: log}
	start := time.Now()
	hollowDone := make(chan error, 1)
	go func() { hollowDone <- hollow.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		for name, done := range map[string]chan error{"hollow nodes": hollowDone, "scheduler": schedDone, "controller-manager": cmDone} {
			if err := <-done; err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	})

	c := s.Client
	nodeAPI, podAPI, leaseAPI := client.For[*v1.Node](c), client.For[*v1.Pod](c), client.For[*v1.Lease](c)
	cidrs := map[string]netip.Prefix{}
	wait.Eventually(t, 90*time.Second, fmt.Sprintf("%d Ready hollow nodes with pod CIDRs", nodes), func() error {
		ns, _, err := nodeAPI.List(ctx, client.ListOptions{LabelSelector: hollow.LabelHollow + "=true"})
		if err != nil {
			return err
		}
		ready := 0
		for _, n := range ns {
			p, err := netip.ParsePrefix(n.GetSpec().GetPodCidr())
			if err == nil && conditionTrue(n, "Ready") {
				ready++
				cidrs[n.GetMetadata().GetName()] = p
			}
		}
		if ready != nodes {
			return fmt.Errorf("%d of %d nodes Ready (%d registered)", ready, nodes, len(ns))
		}
		return nil
	})
	t.Logf("%d nodes Ready after %s", nodes, time.Since(start).Round(time.Millisecond))
	n0, err := nodeAPI.Get(ctx, "", cfg.NodeName(0))
	if err != nil {
		t.Fatal(err)
	}
	if got := n0.GetStatus().GetNodeInfo().GetContainerRuntimeVersion(); got != "hollow://0.1.0" {
		t.Errorf("node %s: containerRuntimeVersion %q, want hollow://0.1.0", cfg.NodeName(0), got)
	}
	renewed := map[string]time.Time{}
	leases, _, err := leaseAPI.List(ctx, client.ListOptions{Namespace: "kube-node-lease"})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range leases {
		renewed[l.GetMetadata().GetName()] = l.GetSpec().GetRenewTime().AsTime()
	}

	deps := client.For[*v1.Deployment](c)
	created := time.Now()
	for i := range deployments {
		if _, err := deps.Create(ctx, deployment(fmt.Sprintf("load-%d", i), replicas)); err != nil {
			t.Fatal(err)
		}
	}
	want := deployments * replicas
	wait.Eventually(t, 240*time.Second, fmt.Sprintf("%d Running pods", want), func() error {
		ps, _, err := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "load"})
		if err != nil {
			return err
		}
		running := 0
		for _, p := range ps {
			if p.GetStatus().GetPhase() != "Running" || !conditionTrue(p, "Ready") {
				continue
			}
			ip, err := netip.ParseAddr(p.GetStatus().GetPodIp())
			cidr, ok := cidrs[p.GetSpec().GetNodeName()]
			if err != nil || !ok || !cidr.Contains(ip) {
				return wait.Stop(fmt.Errorf("pod %s on %s: podIP %q not in the node's pod CIDR %s", p.GetMetadata().GetName(), p.GetSpec().GetNodeName(), p.GetStatus().GetPodIp(), cidr))
			}
			running++
		}
		if running != want {
			return fmt.Errorf("%d of %d pods Running and Ready (%d exist)", running, want, len(ps))
		}
		return nil
	})
	t.Logf("%d pods Running %s after the Deployments were created", want, time.Since(created).Round(time.Millisecond))
	ips := map[string]string{}
	ps, _, err := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "load"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !hasTokenVolume(p) {
			t.Fatalf("pod %s has no projected serviceAccountToken volume: %v", p.GetMetadata().GetName(), p.GetSpec().GetVolumes())
		}
		ip := p.GetStatus().GetPodIp()
		if other, dup := ips[ip]; dup {
			t.Fatalf("pods %s and %s both have address %s", other, p.GetMetadata().GetName(), ip)
		}
		ips[ip] = p.GetMetadata().GetName()
	}

	for i := range deployments {
		if _, err := deps.Delete(ctx, "default", fmt.Sprintf("load-%d", i), client.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deleted := time.Now()
	wait.Eventually(t, 150*time.Second, "every pod deleted", func() error {
		ps, _, err := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "load"})
		if err != nil {
			return err
		}
		if len(ps) != 0 {
			return fmt.Errorf("%d pods left", len(ps))
		}
		return nil
	})

	t.Logf("every pod deleted %s after the Deployments were", time.Since(deleted).Round(time.Millisecond))
	wait.Eventually(t, 30*time.Second, "every node's Lease renewed and the node Ready", func() error {
		leases, _, err := leaseAPI.List(ctx, client.ListOptions{Namespace: "kube-node-lease"})
		if err != nil {
			return err
		}
		fresh := 0
		for _, l := range leases {
			if first, ok := renewed[l.GetMetadata().GetName()]; ok && l.GetSpec().GetRenewTime().AsTime().After(first) {
				fresh++
			}
		}
		if fresh != nodes {
			return fmt.Errorf("%d of %d leases renewed since the nodes were Ready", fresh, nodes)
		}
		ns, _, err := nodeAPI.List(ctx, client.ListOptions{LabelSelector: hollow.LabelHollow + "=true"})
		if err != nil {
			return err
		}
		for _, n := range ns {
			if !conditionTrue(n, "Ready") {
				return fmt.Errorf("node %s is not Ready", n.GetMetadata().GetName())
			}
		}
		return nil
	})
	// The pods' directories are gone with them (housekeeping may take
	// its interval; the workers remove them as the pods go).
	wait.Eventually(t, 60*time.Second, "no pod directory left on any node", func() error {
		for i := range nodes {
			es, err := os.ReadDir(filepath.Join(cfg.RootDir, cfg.NodeName(i), "pods"))
			if err != nil && !os.IsNotExist(err) {
				return err
			}
			if len(es) > 0 {
				return fmt.Errorf("node %s: %d pod directories", cfg.NodeName(i), len(es))
			}
		}
		return nil
	})
}

// hasTokenVolume: the pod has a projected volume with a
// serviceAccountToken source (the ServiceAccount admission's
// kube-api-access-*).
func hasTokenVolume(p *v1.Pod) bool {
	for _, v := range p.GetSpec().GetVolumes() {
		for _, src := range v.GetProjected().GetSources() {
			if src.GetServiceAccountToken() != nil {
				return true
			}
		}
	}
	return false
}

func conditionTrue[T interface {
	*v1.Node | *v1.Pod
}](obj T, typ string) bool {
	var conds []*v1.Condition
	switch o := any(obj).(type) {
	case *v1.Node:
		conds = o.GetStatus().GetConditions()
	case *v1.Pod:
		conds = o.GetStatus().GetConditions()
	}
	for _, c := range conds {
		if c.GetType() == typ {
			return c.GetStatus() == "True"
		}
	}
	return false
}

func deployment(name string, replicas int32) *v1.Deployment {
	lbl := map[string]string{"app": name, "load": "true"}
	grace := int64(0)
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec: &v1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []*v1.Container{{
						Name: "main", Image: "busybox", Command: []string{"sleep", "3600"},
						ReadinessProbe: &v1.Probe{Exec: &v1.ExecAction{Command: []string{"true"}}, PeriodSeconds: 10},
					}},
				},
			},
		},
	}
}
