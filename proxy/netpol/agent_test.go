package netpol

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/proxy/internal/nstest"
)

// fakeSource is a Source over maps, safe for concurrent use.
type fakeSource struct {
	mu       sync.Mutex
	pods     map[string]*v1.Pod
	ns       map[string]*v1.Namespace
	policies map[string]*v1.NetworkPolicy
}

func newFakeSource() *fakeSource {
	return &fakeSource{pods: map[string]*v1.Pod{}, ns: map[string]*v1.Namespace{}, policies: map[string]*v1.NetworkPolicy{}}
}

func (f *fakeSource) Pods() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.Pod
	for _, p := range f.pods {
		out = append(out, p)
	}
	return out
}

func (f *fakeSource) Namespace(name string) (*v1.Namespace, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.ns[name]
	return n, ok
}

func (f *fakeSource) NetworkPolicies() []*v1.NetworkPolicy {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*v1.NetworkPolicy
	for _, p := range f.policies {
		out = append(out, p)
	}
	return out
}

func (f *fakeSource) setPolicy(np *v1.NetworkPolicy) {
	k, _ := kinds.ForMessage(np)
	k.Default(np)
	if errs := k.Validate(np); len(errs) > 0 {
		panic(fmt.Sprint(errs))
	}
	f.mu.Lock()
	f.policies[v1.Key(np)] = np
	f.mu.Unlock()
}

func (f *fakeSource) deletePolicy(key string) {
	f.mu.Lock()
	delete(f.policies, key)
	f.mu.Unlock()
}

func pod(ns, name, node, ip string, labels map[string]string, ports ...*v1.ContainerPort) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:   &v1.PodSpec{NodeName: node, Containers: []*v1.Container{{Name: "c", Image: "x", Ports: ports}}},
		Status: &v1.PodStatus{Phase: "Running", PodIp: ip}}
}

func netpol(ns, name string, spec *v1.NetworkPolicySpec) *v1.NetworkPolicy {
	return &v1.NetworkPolicy{Metadata: &v1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
}

func sel(kv ...string) *v1.LabelSelector {
	s := &v1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

// try connects from ns to addr and reads Serve's line; a dropped SYN
// fails within the short timeout.
func try(ns *nstest.NS, addr string) error {
	c, err := ns.Dial("tcp", addr, 600*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func tryUDP(ns *nstest.NS, addr string) error {
	c, err := ns.Dial("udp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Write([]byte("?")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(600 * time.Millisecond))
	buf := make([]byte, 64)
	_, err = c.Read(buf)
	return err
}

func serveUDP(t *testing.T, ns *nstest.NS, addr string) {
	var pc net.PacketConn
	if err := ns.Do(func() (err error) { pc, err = net.ListenPacket("udp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte("dns"), from)
		}
	}()
}

type expectation struct {
	what    string
	allowed bool
	check   func() error
}

// expect waits until every expectation holds (the agent programs
// asynchronously), then checks once more that all hold together.
func expect(t *testing.T, step string, es ...expectation) time.Duration {
	t.Helper()
	start := time.Now()
	wait.Eventually(t, 10*time.Second, step, func() error {
		for _, e := range es {
			err := e.check()
			if e.allowed && err != nil {
				return fmt.Errorf("%s: want allowed, got %v", e.what, err)
			}
			if !e.allowed && err == nil {
				return fmt.Errorf("%s: want dropped, got through", e.what)
			}
		}
		return nil
	})
	return time.Since(start)
}

// TestPoliciesInNamespaces enforces the Kubernetes documentation's
// policies with real traffic between network namespaces: a node with
// four pods on its bridge and a peer host.
//
//	pod1 10.244.1.2 default/web    app=web, port http 8080
//	pod2 10.244.1.3 default/front  role=frontend
//	pod3 10.244.1.4 default/other  role=other
//	pod4 10.244.1.5 team-a/client  (namespace team=a)
//	peer 192.168.77.2 (another host)
func TestPoliciesInNamespaces(t *testing.T) {
	l := nstest.NewLab(t, 4)
	l.Node.Sysctl("net/bridge/bridge-nf-call-iptables", "1")
	web, front, other, teamA, peer := l.Pods[0], l.Pods[1], l.Pods[2], l.Pods[3], l.Peer
	nstest.Serve(t, web, "web", ":8080")
	nstest.Serve(t, web, "web-admin", ":9090")
	nstest.Serve(t, front, "front", ":8080")
	nstest.Serve(t, peer, "peer", ":8080")
	l.Node.AddAddr("lo", "10.96.0.10/32")
	serveUDP(t, l.Node, "10.96.0.10:53")

	src := newFakeSource()
	http := &v1.ContainerPort{Name: "http", ContainerPort: 8080}
	src.pods["default/web"] = pod("default", "web", "node1", nstest.PodIP(0), map[string]string{"app": "web"}, http)
	src.pods["default/front"] = pod("default", "front", "node1", nstest.PodIP(1), map[string]string{"role": "frontend"})
	src.pods["default/other"] = pod("default", "other", "node1", nstest.PodIP(2), map[string]string{"role": "other"})
	src.pods["team-a/client"] = pod("team-a", "client", "node1", nstest.PodIP(3), nil)
	src.pods["default/elsewhere"] = pod("default", "elsewhere", "node2", "10.244.2.7", map[string]string{"role": "frontend"})
	src.ns["team-a"] = &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "team-a", Labels: map[string]string{"team": "a"}}}

	reg := prometheus.NewRegistry()
	a, err := New(Config{NodeName: "node1", ClusterDNS: mustAddr("10.96.0.10"), NetNS: l.Node.Fd(), Source: src, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	webAddr := nstest.PodIP(0) + ":8080"
	toWeb := func(from *nstest.NS, addr string) func() error { return func() error { return try(from, addr) } }
	allow := func(what string, f func() error) expectation { return expectation{what, true, f} }
	deny := func(what string, f func() error) expectation { return expectation{what, false, f} }

	expect(t, "no policy: all traffic passes",
		allow("front -> web", toWeb(front, webAddr)), allow("other -> web", toWeb(other, webAddr)),
		allow("team-a -> web", toWeb(teamA, webAddr)), allow("peer -> web", toWeb(peer, webAddr)))

	// Default deny of ingress (the docs' default-deny-ingress).
	src.setPolicy(netpol("default", "default-deny-ingress", &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{}, PolicyTypes: []string{"Ingress"}}))
	a.Changed()
	expect(t, "default-deny-ingress",
		deny("front -> web", toWeb(front, webAddr)), deny("other -> web", toWeb(other, webAddr)),
		deny("peer -> web", toWeb(peer, webAddr)), deny("web -> front", toWeb(web, nstest.PodIP(1)+":8080")))

	// Allow from role=frontend on the named port http: exactly front, and
	// only on 8080.
	src.setPolicy(netpol("default", "allow-frontend", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"),
		Ingress: []*v1.NetworkPolicyIngressRule{{From: []*v1.NetworkPolicyPeer{{PodSelector: sel("role", "frontend")}},
			Ports: []*v1.NetworkPolicyPort{{Port: proto.String("http")}}}}}))
	a.Changed()
	expect(t, "allow role=frontend on port http",
		allow("front -> web:8080", toWeb(front, webAddr)), deny("front -> web:9090", toWeb(front, nstest.PodIP(0)+":9090")),
		deny("other -> web", toWeb(other, webAddr)), deny("team-a -> web", toWeb(teamA, webAddr)))

	// A namespaceSelector admits the pods of the labelled namespace; a
	// port range 9000-9100 covers 9090.
	src.setPolicy(netpol("default", "allow-team-a", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"),
		Ingress: []*v1.NetworkPolicyIngressRule{{From: []*v1.NetworkPolicyPeer{{NamespaceSelector: sel("team", "a")}},
			Ports: []*v1.NetworkPolicyPort{{Port: proto.String("9000"), EndPort: proto.Int32(9100)}}}}}))
	a.Changed()
	expect(t, "namespaceSelector team=a, ports 9000-9100",
		allow("team-a -> web:9090", toWeb(teamA, nstest.PodIP(0)+":9090")), deny("team-a -> web:8080", toWeb(teamA, webAddr)),
		deny("other -> web:9090", toWeb(other, nstest.PodIP(0)+":9090")))

	// ipBlock with except: the lab subnet but the peer.
	src.setPolicy(netpol("default", "allow-lab", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"),
		Ingress: []*v1.NetworkPolicyIngressRule{{From: []*v1.NetworkPolicyPeer{{IpBlock: &v1.IPBlock{Cidr: nstest.LabSubnet, Except: []string{nstest.PeerIP + "/32"}}}}}}}))
	a.Changed()
	expect(t, "ipBlock except the peer", deny("peer -> web", toWeb(peer, webAddr)))
	src.setPolicy(netpol("default", "allow-lab", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"),
		Ingress: []*v1.NetworkPolicyIngressRule{{From: []*v1.NetworkPolicyPeer{{IpBlock: &v1.IPBlock{Cidr: nstest.LabSubnet}}}}}}))
	a.Changed()
	expect(t, "ipBlock without except", allow("peer -> web", toWeb(peer, webAddr)))

	// Egress: front may send nothing, so neither web nor the cluster DNS;
	// replies to what others send it still pass (conntrack).
	src.setPolicy(netpol("default", "front-egress", &v1.NetworkPolicySpec{PodSelector: sel("role", "frontend"), PolicyTypes: []string{"Egress"}}))
	src.setPolicy(netpol("default", "web-egress", &v1.NetworkPolicySpec{PodSelector: sel("app", "web"), PolicyTypes: []string{"Egress"}}))
	a.Changed()
	expect(t, "egress deny of front and web",
		deny("front -> web", toWeb(front, webAddr)), deny("front -> DNS", func() error { return tryUDP(front, "10.96.0.10:53") }),
		allow("peer -> web (the reply leaves egress-isolated web)", toWeb(peer, webAddr)),
		deny("web -> peer", toWeb(web, nstest.PeerIP+":8080")))
	// The docs' DNS allowance: UDP and TCP 53 to kube-system's kube-dns.
	src.setPolicy(netpol("default", "front-egress", &v1.NetworkPolicySpec{PodSelector: sel("role", "frontend"), PolicyTypes: []string{"Egress"},
		Egress: []*v1.NetworkPolicyEgressRule{{
			To:    []*v1.NetworkPolicyPeer{{NamespaceSelector: sel("kubernetes.io/metadata.name", "kube-system"), PodSelector: sel("k8s-app", "kube-dns")}},
			Ports: []*v1.NetworkPolicyPort{{Protocol: proto.String("UDP"), Port: proto.String("53")}, {Protocol: proto.String("TCP"), Port: proto.String("53")}}}}}))
	a.Changed()
	expect(t, "egress allows DNS only",
		allow("front -> DNS", func() error { return tryUDP(front, "10.96.0.10:53") }), deny("front -> web", toWeb(front, webAddr)))

	if n := dropCount(t, reg, "ingress", "default-deny-ingress"); n == 0 {
		t.Errorf("tugboat_proxy_network_policy_drops_total{direction=ingress,policy=default-deny-ingress} = 0, want > 0")
	}

	// Removing the policies restores everything.
	for _, k := range []string{"default/default-deny-ingress", "default/allow-frontend", "default/allow-team-a", "default/allow-lab", "default/front-egress", "default/web-egress"} {
		src.deletePolicy(k)
	}
	a.Changed()
	took := expect(t, "policies removed",
		allow("front -> web", toWeb(front, webAddr)), allow("other -> web", toWeb(other, webAddr)),
		allow("peer -> web", toWeb(peer, webAddr)), allow("front -> DNS", func() error { return tryUDP(front, "10.96.0.10:53") }))
	t.Logf("traffic restored %v after the policies were deleted", took)
	out, err := l.Node.Exec(context.Background(), "nft", "list", "table", "ip", DefaultTable)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "pod-in/") || strings.Contains(out, "np-in/") {
		t.Errorf("chains left after the policies were deleted:\n%s", out)
	}
	if ok, err := Cleanup("", l.Node.Fd()); err != nil || !ok {
		t.Fatalf("Cleanup = %v, %v; want the table removed", ok, err)
	}
}

func dropCount(t *testing.T, reg *prometheus.Registry, dir, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "tugboat_proxy_network_policy_drops_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			lbl := map[string]string{}
			for _, lp := range m.GetLabel() {
				lbl[lp.GetName()] = lp.GetValue()
			}
			if lbl["direction"] == dir && lbl["policy"] == name {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
