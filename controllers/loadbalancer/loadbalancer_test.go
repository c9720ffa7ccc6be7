package loadbalancer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/loadbalancer"
)

func lbService(name string, port int32) *v1.Service {
	return &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name},
		Spec: &v1.ServiceSpec{Type: "LoadBalancer", Selector: map[string]string{"app": name}, Ports: []*v1.ServicePort{{Port: port, TargetPort: "8080"}}}}
}

// ingress is a Service's status.loadBalancer.ingress addresses, joined.
func ingress(ctx context.Context, c *client.Client, name string) string {
	s, err := client.For[*v1.Service](c).Get(ctx, "default", name)
	if err != nil {
		return err.Error()
	}
	var ips []string
	for _, in := range s.GetStatus().GetLoadBalancer().GetIngress() {
		ips = append(ips, in.Ip)
	}
	return strings.Join(ips, ",")
}

func waitIngress(t *testing.T, ctx context.Context, c *client.Client, name, want string) {
	t.Helper()
	wait.Eventually(t, 15*time.Second, name+"'s ingress "+want, func() error {
		if got := ingress(ctx, c, name); got != want {
			return fmt.Errorf("%s: ingress %q, want %q", name, got, want)
		}
		return nil
	})
}

func waitEvent(t *testing.T, c *client.Client, object, reason, substr string) {
	t.Helper()
	wait.Eventually(t, 15*time.Second, "a "+reason+" event on "+object, func() error {
		evs, _, err := client.For[*v1.Event](c).List(context.Background(), client.ListOptions{Namespace: "default"})
		if err != nil {
			return err
		}
		for _, e := range evs {
			if e.InvolvedObject.GetName() == object && e.Reason == reason && strings.Contains(e.Message, substr) {
				return nil
			}
		}
		return fmt.Errorf("no %s event on %s", reason, object)
	})
}

func TestPool(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	c := s.Client
	d := controllertest.Deps(ctx, c)
	ctrl, err := loadbalancer.New(d, loadbalancer.Config{Pool: []string{"192.0.2.10-192.0.2.11"}})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ctrl)
	svcs := client.For[*v1.Service](c)
	for _, n := range []string{"a", "b"} {
		if _, err := svcs.Create(ctx, lbService(n, 80)); err != nil {
			t.Fatal(err)
		}
	}
	wait.Eventually(t, 15*time.Second, "a and b addressed", func() error {
		got := ingress(ctx, c, "a") + " " + ingress(ctx, c, "b")
		if got != "192.0.2.10 192.0.2.11" && got != "192.0.2.11 192.0.2.10" {
			return fmt.Errorf("ingress %q", got)
		}
		return nil
	})
	// The pool is spent: the third waits with an Event saying why.
	if _, err := svcs.Create(ctx, lbService("c", 80)); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "c", "AllocationFailed", "no addresses left in the pool 192.0.2.10-192.0.2.11")
	if got := ingress(ctx, c, "c"); got != "" {
		t.Fatalf("c got %q from a spent pool", got)
	}
	// A requested address outside the pool is refused by name.
	bad := lbService("d", 81)
	bad.Spec.LoadBalancerIp = "198.51.100.1"
	if _, err := svcs.Create(ctx, bad); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "d", "AllocationFailed", "spec.loadBalancerIP 198.51.100.1 is not in the pool")
	// a stops being a LoadBalancer: its address goes to c, its status is cleared.
	freed := ingress(ctx, c, "a")
	if _, err := svcs.Mutate(ctx, "default", "a", false, func(s *v1.Service) error {
		s.Spec.Type = "ClusterIP"
		s.Spec.AllocateLoadBalancerNodePorts, s.Spec.ExternalTrafficPolicy = nil, ""
		for _, p := range s.Spec.Ports {
			p.NodePort = 0
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, ctx, c, "a", "")
	waitIngress(t, ctx, c, "c", freed)
	waitEvent(t, c, "c", "EnsuredLoadBalancer", freed)

	// A restarted controller keeps every address where it was.
	d2 := controllertest.Deps(ctx, c)
	ctrl2, err := loadbalancer.New(d2, loadbalancer.Config{Pool: []string{"192.0.2.10-192.0.2.11"}})
	if err != nil {
		t.Fatal(err)
	}
	b, cc := ingress(ctx, c, "b"), ingress(ctx, c, "c")
	ctx2, cancel := context.WithCancel(ctx)
	controllertest.RunAll(ctx2, t, d2.Informers, ctrl2)
	if _, err := svcs.Create(ctx, lbService("e", 82)); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "e", "AllocationFailed", "no addresses left")
	cancel()
	if ingress(ctx, c, "b") != b || ingress(ctx, c, "c") != cc {
		t.Fatalf("addresses moved across a restart: b %s→%s, c %s→%s", b, ingress(ctx, c, "b"), cc, ingress(ctx, c, "c"))
	}
}

func TestConfigValidate(t *testing.T) {
	for _, pool := range [][]string{{"10.0.0.1/24"}, {"10.0.0.9-10.0.0.1"}, {"fd00::/120"}, {"10.0.0.0/29", "10.0.0.4-10.0.0.20"}, {"nope"}} {
		cfg := loadbalancer.Config{Pool: pool}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--lb-pool") {
			t.Errorf("pool %v: %v", pool, err)
		}
	}
	cfg := loadbalancer.Config{Pool: []string{"192.168.100.240/29", "10.0.0.50-10.0.0.60"}}
	if err := cfg.Validate(); err != nil {
		t.Error(err)
	}
}

func TestNodeAddresses(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	c := s.Client
	d := controllertest.Deps(ctx, c)
	ctrl, err := loadbalancer.New(d, loadbalancer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ctrl)
	nodes := client.For[*v1.Node](c)
	for i, n := range []string{"n1", "n2"} {
		if _, err := nodes.Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: n}}); err != nil {
			t.Fatal(err)
		}
		if _, err := nodes.Mutate(ctx, "", n, true, func(nd *v1.Node) error {
			nd.Status = &v1.NodeStatus{Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}},
				Addresses: []*v1.NodeAddress{{Type: "InternalIP", Address: fmt.Sprintf("10.0.0.%d", 11+i)}}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	svcs := client.For[*v1.Service](c)
	if _, err := svcs.Create(ctx, lbService("web", 80)); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, ctx, c, "web", "10.0.0.11,10.0.0.12")
	// A second Service on the same port cannot share the nodes' addresses.
	if _, err := svcs.Create(ctx, lbService("other", 80)); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, c, "other", "AllocationFailed", "port 80/TCP is already served on the nodes' addresses by LoadBalancer Service default/web")
	// A node going NotReady leaves the ingress.
	if _, err := nodes.Mutate(ctx, "", "n2", true, func(nd *v1.Node) error { nd.Status.Conditions[0].Status = "False"; return nil }); err != nil {
		t.Fatal(err)
	}
	waitIngress(t, ctx, c, "web", "10.0.0.11")
}
