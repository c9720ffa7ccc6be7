package apiserver_test

import (
	"net"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func svc(name, typ, ip string, nodePort int32) *v1.Service {
	return &v1.Service{
		Metadata: &v1.ObjectMeta{Name: name},
		Spec: &v1.ServiceSpec{Type: typ, ClusterIp: ip, Selector: map[string]string{"app": name},
			Ports: []*v1.ServicePort{{Port: 80, TargetPort: "8080", NodePort: nodePort}}},
	}
}

func TestServiceIPAndNodePortAllocation(t *testing.T) {
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.ServiceCIDR = "10.96.0.0/28"; c.NodePortRange = "30000-30004" })
	ctx := ctxT(t)
	svcs := client.For[*v1.Service](s.Client)
	_, cidr, _ := net.ParseCIDR("10.96.0.0/28")
	a, err := svcs.Create(ctx, svc("a", "", "", 0))
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(a.Spec.ClusterIp)
	if ip == nil || !cidr.Contains(ip) || a.Spec.ClusterIp == "10.96.0.1" || a.Spec.ClusterIp == "10.96.0.10" {
		t.Fatalf("bad clusterIP %q", a.Spec.ClusterIp)
	}
	// Asking for a taken address: a clear error, nothing stored.
	_, err = svcs.Create(ctx, svc("b", "", a.Spec.ClusterIp, 0))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterIP") || !strings.Contains(err.Error(), "already allocated") {
		t.Fatalf("want already allocated, got %v", err)
	}
	if _, err := svcs.Get(ctx, "default", "b"); !apierrors.IsNotFound(err) {
		t.Fatal("refused service was stored")
	}
	if _, err := svcs.Create(ctx, svc("c", "", "10.97.0.1", 0)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "not in the service CIDR") {
		t.Fatalf("want out of range, got %v", err)
	}
	// Immutable.
	other := "10.96.0.9"
	if a.Spec.ClusterIp == other {
		other = "10.96.0.8"
	}
	a.Spec.ClusterIp = other
	if _, err := svcs.Update(ctx, a); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("want immutable, got %v", err)
	}
	// Node ports.
	np, err := svcs.Create(ctx, svc("np", "NodePort", "", 0))
	if err != nil {
		t.Fatal(err)
	}
	port := np.Spec.Ports[0].NodePort
	if port < 30000 || port > 30004 {
		t.Fatalf("nodePort %d", port)
	}
	if _, err := svcs.Create(ctx, svc("np2", "NodePort", "", port)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ports[0].nodePort") {
		t.Fatalf("want taken nodePort error, got %v", err)
	}
	// Deleting frees both: the same address and port can be asked for again.
	if _, err := svcs.Delete(ctx, "default", "np", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	again, err := svcs.Create(ctx, svc("np3", "NodePort", np.Spec.ClusterIp, port))
	if err != nil {
		t.Fatalf("address and port not freed: %v", err)
	}
	if again.Spec.ClusterIp != np.Spec.ClusterIp || again.Spec.Ports[0].NodePort != port {
		t.Fatalf("got %s:%d", again.Spec.ClusterIp, again.Spec.Ports[0].NodePort)
	}
	// Exhaust the /28: 16 addresses - network - broadcast - .1 - .10 = 12.
	n := 2 // a and np3 hold two
	for i := 0; ; i++ {
		_, err := svcs.Create(ctx, svc("fill"+string(rune('a'+i)), "", "", 0))
		if err != nil {
			if !strings.Contains(err.Error(), "is full") {
				t.Fatalf("want CIDR full, got %v", err)
			}
			break
		}
		n++
		if n > 20 {
			t.Fatal("allocated more addresses than the CIDR has")
		}
	}
	if n != 12 {
		t.Fatalf("allocated %d addresses from a /28, want 12", n)
	}
}

func TestNodePortChangeFreesOldPortAfterCommit(t *testing.T) {
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.NodePortRange = "30000-30009" })
	ctx := ctxT(t)
	svcs := client.For[*v1.Service](s.Client)
	a, err := svcs.Create(ctx, svc("a", "NodePort", "", 30001))
	if err != nil {
		t.Fatal(err)
	}
	// A stale update (conflict) must not free 30001.
	stale := proto.Clone(a).(*v1.Service)
	a.Metadata.Labels = map[string]string{"x": "y"}
	if a, err = svcs.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	stale.Spec.Ports[0].NodePort = 30002
	if _, err := svcs.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("want conflict, got %v", err)
	}
	if _, err := svcs.Create(ctx, svc("b", "NodePort", "", 30001)); err == nil {
		t.Fatal("30001 was freed by an update that failed")
	}
	// 30002 was claimed for the failed update and must be free again.
	if _, err := svcs.Create(ctx, svc("c", "NodePort", "", 30002)); err != nil {
		t.Fatalf("30002 leaked from the failed update: %v", err)
	}
	// A stored change frees the old port.
	a.Spec.Ports[0].NodePort = 30003
	if _, err := svcs.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, svc("d", "NodePort", "", 30001)); err != nil {
		t.Fatalf("30001 not freed after the committed change: %v", err)
	}
}

// TestRepairFreesClaimsOfGoneServices: claims an apiserver left behind (it
// died between claiming and storing the Service) are freed at the next
// start, and claims of stored Services are kept.
func TestRepairFreesClaimsOfGoneServices(t *testing.T) {
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.ServiceCIDR = "10.96.0.0/28"; c.NodePortRange = "30000-30009" })
	ctx := ctxT(t)
	svcs := client.For[*v1.Service](s.Client)
	kept, err := svcs.Create(ctx, svc("kept", "NodePort", "10.96.0.4", 30004))
	if err != nil {
		t.Fatal(err)
	}
	etcd := s.Etcd()
	for _, key := range []string{"/registry/ranges/serviceips/10.96.0.5", "/registry/ranges/nodeports/30005"} {
		if _, err := etcd.Put(ctx, key, "default/ghost"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svcs.Create(ctx, svc("early", "NodePort", "10.96.0.5", 0)); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "already allocated") {
		t.Fatalf("a left-over claim should hold until repaired, got %v", err)
	}
	s.Restart()
	if _, err := svcs.Create(ctx, svc("late", "NodePort", "10.96.0.5", 30005)); err != nil {
		t.Fatalf("the left-over claims were not repaired: %v", err)
	}
	if _, err := svcs.Create(ctx, svc("thief", "NodePort", kept.Spec.ClusterIp, 0)); !apierrors.IsInvalid(err) {
		t.Fatalf("repair freed a stored Service's address: %v", err)
	}
	if _, err := svcs.Create(ctx, svc("thief", "NodePort", "", 30004)); !apierrors.IsInvalid(err) {
		t.Fatalf("repair freed a stored Service's node port: %v", err)
	}
}

// TestLoadBalancerAndExternalNameAllocation: a LoadBalancer gets node
// ports (none with allocateLoadBalancerNodePorts false) and, with
// externalTrafficPolicy Local, a health check node port kept across
// updates and freed when the policy changes; an ExternalName Service gets
// no address, and turning a ClusterIP Service into one frees its address.
func TestLoadBalancerAndExternalNameAllocation(t *testing.T) {
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.ServiceCIDR = "10.96.0.0/28"; c.NodePortRange = "30000-30009" })
	ctx := ctxT(t)
	svcs := client.For[*v1.Service](s.Client)
	lb := svc("lb", "LoadBalancer", "", 0)
	lb.Spec.ExternalTrafficPolicy = "Local"
	lb, err := svcs.Create(ctx, lb)
	if err != nil {
		t.Fatal(err)
	}
	np, hc := lb.Spec.Ports[0].NodePort, lb.Spec.HealthCheckNodePort
	if np < 30000 || np > 30009 || hc < 30000 || hc > 30009 || np == hc {
		t.Fatalf("nodePort %d, healthCheckNodePort %d", np, hc)
	}
	lb.Metadata.Labels = map[string]string{"x": "y"}
	if lb, err = svcs.Update(ctx, lb); err != nil || lb.Spec.HealthCheckNodePort != hc {
		t.Fatalf("health check port not kept: %v, %d", err, lb.GetSpec().GetHealthCheckNodePort())
	}
	taken := svc("taken", "NodePort", "", hc)
	if _, err := svcs.Create(ctx, taken); !apierrors.IsInvalid(err) {
		t.Fatalf("the health check port is not claimed: %v", err)
	}
	lb.Spec.ExternalTrafficPolicy, lb.Spec.HealthCheckNodePort = "Cluster", 0
	if lb, err = svcs.Update(ctx, lb); err != nil || lb.Spec.HealthCheckNodePort != 0 {
		t.Fatalf("Cluster policy: %v, healthCheckNodePort %d", err, lb.GetSpec().GetHealthCheckNodePort())
	}
	if _, err := svcs.Create(ctx, taken); err != nil {
		t.Fatalf("the health check port was not freed: %v", err)
	}

	noPorts := svc("noports", "LoadBalancer", "", 0)
	noPorts.Spec.AllocateLoadBalancerNodePorts = proto.Bool(false)
	if noPorts, err = svcs.Create(ctx, noPorts); err != nil || noPorts.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("allocateLoadBalancerNodePorts false: %v, nodePort %d", err, noPorts.GetSpec().GetPorts()[0].GetNodePort())
	}

	ext := &v1.Service{Metadata: &v1.ObjectMeta{Name: "ext"}, Spec: &v1.ServiceSpec{Type: "ExternalName", ExternalName: "db.example.com"}}
	if ext, err = svcs.Create(ctx, ext); err != nil || ext.Spec.ClusterIp != "" || len(ext.Spec.ClusterIps) != 0 {
		t.Fatalf("ExternalName: %v, clusterIP %q", err, ext.GetSpec().GetClusterIp())
	}
	plain, err := svcs.Create(ctx, svc("plain", "", "", 0))
	if err != nil {
		t.Fatal(err)
	}
	ip := plain.Spec.ClusterIp
	plain.Spec = &v1.ServiceSpec{Type: "ExternalName", ExternalName: "db.example.com"}
	if _, err := svcs.Update(ctx, plain); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, svc("reuse", "", ip, 0)); err != nil {
		t.Fatalf("the address of a Service turned ExternalName was not freed: %v", err)
	}
	headless, err := svcs.Create(ctx, svc("headless", "", "None", 0))
	if err != nil || len(headless.Spec.ClusterIps) != 1 || headless.Spec.ClusterIps[0] != "None" {
		t.Fatalf("headless: %v, clusterIPs %v", err, headless.GetSpec().GetClusterIps())
	}
}
