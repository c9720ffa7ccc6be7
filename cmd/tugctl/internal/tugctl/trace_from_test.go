package tugctl

import (
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// trace service --from: the path from one client pod, tried by its node's
// kubelet from the pod's namespace, with the NetworkPolicies judged.
func TestTraceServiceFrom(t *testing.T) {
	e := newEnv(t)
	readyNode(t, e, "n1", "True")
	readyNode(t, e, "n2", "True")
	n1 := e.startFakeNode("n1")
	e.startFakeNode("n2")
	web := mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Port: 80, TargetPort: "8080"}}}})
	ip := web.Spec.ClusterIp
	running := func(name, node, podIP string, lbl map[string]string, mod func(*v1.Pod)) {
		t.Helper()
		p := testPod(name, lbl)
		if mod != nil {
			mod(p)
		}
		mustCreate(t, e.c, p)
		if _, err := e.c.Bind(ctxT(t), "default", name, node, 0); err != nil {
			t.Fatal(err)
		}
		setPodStatus(t, e.c, name, &v1.PodStatus{Phase: "Running", PodIp: podIP, Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}})
	}
	running("web-1", "n2", "10.244.2.5", map[string]string{"app": "web"}, nil)
	running("client", "n1", "10.244.1.7", map[string]string{"app": "client"}, nil)
	running("hostdns", "n1", "10.244.1.8", map[string]string{"app": "client"}, func(p *v1.Pod) { p.Spec.DnsPolicy = "Default" })
	mustCreate(t, e.c, &v1.Endpoints{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Subsets: []*v1.EndpointSubset{{
		Addresses: []*v1.EndpointAddress{{Ip: "10.244.2.5", NodeName: "n2", TargetRef: &v1.ObjectReference{Kind: "Pod", Name: "web-1"}}},
		Ports:     []*v1.EndpointPort{{Port: 8080, Protocol: "TCP"}}}}})

	// n1 answers as a kubelet would from the pod's namespace: connected,
	// unless the test has a policy drop it (then nothing answers).
	var mu sync.Mutex
	var asked []string
	blocked := false
	n1.set(func(n *fakeNode) {
		n.check = func(req *v1.CheckServiceRequest) *v1.CheckServiceResponse {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.FromPod)
			resp := &v1.CheckServiceResponse{NodeName: "n1", SourcePod: req.FromPod,
				Dns: &v1.DNSCheck{Server: "10.96.0.10:53", Rcode: "NOERROR", Addresses: []string{ip}}}
			for _, p := range req.Ports {
				pc := &v1.ServicePortCheck{Protocol: p.Protocol, Port: p.Port, ClusterIp: &v1.ConnectCheck{Address: ip + ":80", Result: "connected", DurationMs: 1}}
				if blocked {
					pc.ClusterIp.Result, pc.ClusterIp.DurationMs = "timeout", 2000
				}
				for _, ep := range p.Endpoints {
					pc.Endpoints = append(pc.Endpoints, &v1.ConnectCheck{Address: ep, Result: pc.ClusterIp.Result})
				}
				resp.Ports = append(resp.Ports, pc)
			}
			return resp
		}
	})
	setBlocked := func(b bool) { mu.Lock(); blocked = b; mu.Unlock() }

	rep := traceJSON(t, e, "service", "web", "--from", "client")
	if !rep.OK {
		t.Errorf("no policy: %+v", rep)
	}
	if g := hopList(rep); g != "client=done dns-config=done dns=done datapath=done egress=done ingress=done endpoints=done" {
		t.Errorf("hops: %s", g)
	}
	if h := hopNamed(rep, "dns-config"); h.Title != "dnsPolicy ClusterFirst: nameserver 10.96.0.10, search default.svc.cluster.local svc.cluster.local cluster.local" ||
		!strings.Contains(h.Message, "the pod can use the name web") {
		t.Errorf("dns-config: %+v", h)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0] != "default/client" {
		t.Errorf("n1 was asked from %v, want [default/client] only", asked)
	}
	mu.Unlock()
	r := mustOK(t, e.run("trace", "svc", "web", "--from", "default/client"))
	assertContains(t, "trace --from", r.out, "ClusterIP "+ip+", ports 80/TCP, from pod default/client",
		"pod default/client on n1, IP 10.244.1.7", "connects to "+ip+" from pod default/client: 80/TCP connected (1ms)",
		"NetworkPolicy egress of default/client", "Every hop is done.")

	// A default-deny ingress policy on web's pods: the node drops it; the
	// timed-out probe is explained by the policy, which the trace names.
	mustCreate(t, e.c, &v1.NetworkPolicy{Metadata: &v1.ObjectMeta{Name: "deny-web", Namespace: "default"},
		Spec: &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, PolicyTypes: []string{"Ingress"}}})
	setBlocked(true)
	rep = traceJSON(t, e, "service", "web", "--from", "client")
	if rep.OK || rep.StuckAt != "ingress" || rep.Reason != "NetworkPolicyDenied" || rep.Layer != "proxy" || rep.Node != "n2" ||
		rep.Message != "10.244.2.5:8080/TCP (web-1): isolated for ingress by default/deny-web, and no ingress rule of theirs allows default/client (10.244.1.7) on that port: the endpoint's node drops it" {
		t.Errorf("deny-web: %+v", rep.Finding)
	}
	if g := hopList(rep); g != "client=done dns-config=done dns=done datapath=unknown:EndpointsUnreachable egress=done ingress=failed:NetworkPolicyDenied endpoints=done" {
		t.Errorf("deny-web hops: %s", g)
	}

	// A rule letting the client in on 8080.
	mustCreate(t, e.c, &v1.NetworkPolicy{Metadata: &v1.ObjectMeta{Name: "allow-client", Namespace: "default"},
		Spec: &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, PolicyTypes: []string{"Ingress"},
			Ingress: []*v1.NetworkPolicyIngressRule{{From: []*v1.NetworkPolicyPeer{{PodSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}}},
				Ports: []*v1.NetworkPolicyPort{{Port: proto.String("8080")}}}}}})
	setBlocked(false)
	if rep = traceJSON(t, e, "service", "web", "--from", "client"); !rep.OK || hopNamed(rep, "ingress").Message != "allowed by default/allow-client" {
		t.Errorf("allow-client: %+v %+v", rep.Finding, hopNamed(rep, "ingress"))
	}

	// Egress default-deny on the client: neither the DNS nor web.
	mustCreate(t, e.c, &v1.NetworkPolicy{Metadata: &v1.ObjectMeta{Name: "deny-egress", Namespace: "default"},
		Spec: &v1.NetworkPolicySpec{PodSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "client"}}, PolicyTypes: []string{"Egress"}}})
	setBlocked(true)
	rep = traceJSON(t, e, "service", "web", "--from", "client")
	if rep.StuckAt != "egress" || rep.Reason != "NetworkPolicyDenied" || rep.Node != "n1" ||
		rep.Message != "default/client is isolated for egress by default/deny-egress and no egress rule of theirs allows the cluster DNS 10.96.0.10:53/UDP, 10.244.2.5:8080/TCP (web-1): the node drops it" {
		t.Errorf("deny-egress: %+v", rep.Finding)
	}
	setBlocked(false)
	if _, err := client.For[*v1.NetworkPolicy](e.c).Delete(ctxT(t), "default", "deny-egress", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// A pod on the node's resolv.conf never reaches the cluster DNS.
	rep = traceJSON(t, e, "service", "web", "--from", "hostdns")
	if rep.StuckAt != "dns-config" || rep.Reason != "DNSPolicyDefault" || rep.Layer != "DNS" ||
		!strings.Contains(rep.Message, "the pod uses its node's resolv.conf (dnsPolicy Default), not the cluster DNS: web.default.svc.cluster.local does not resolve there") {
		t.Errorf("dnsPolicy Default: %+v", rep.Finding)
	}

	// A client that is not scheduled sends nothing; no node is asked.
	mustCreate(t, e.c, testPod("pending", nil))
	rep = traceJSON(t, e, "service", "web", "--from", "pending")
	if rep.StuckAt != "client" || rep.Reason != "ClientNotRunning" || rep.Layer != "scheduler" || len(rep.Hops) != 1 {
		t.Errorf("pending: %+v", rep)
	}
	mustFail(t, e.run("trace", "service", "web", "--from", "nope"), `pods "nope" not found`)
	mustFail(t, e.run("trace", "pod", "client", "--from", "client"), "--from is for trace service")
}
