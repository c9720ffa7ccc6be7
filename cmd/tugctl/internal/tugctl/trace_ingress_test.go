package tugctl

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
)

// tlsSecret is a kubernetes.io/tls Secret with a self-signed certificate
// for hosts, valid from notBefore for a day.
func tlsSecret(t *testing.T, name string, notBefore time.Time, hosts ...string) *v1.Secret {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: notBefore, NotAfter: notBefore.Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &v1.Secret{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name}, Type: "kubernetes.io/tls", Data: map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})}}
}

func ingressRule(host, path, pathType, svc string, port int32) *v1.IngressRule {
	return &v1.IngressRule{Host: host, Http: &v1.HTTPIngressRuleValue{Paths: []*v1.HTTPIngressPath{{Path: path, PathType: proto.String(pathType),
		Backend: &v1.IngressBackend{Service: &v1.IngressServiceBackend{Name: svc, Port: &v1.ServiceBackendPort{Number: port}}}}}}}
}

// hopList is "hop=status[:reason]" of every hop.
func hopList(r diagnose.Report) string {
	var out []string
	for _, h := range r.Hops {
		s := h.Hop + "=" + h.Status
		if h.Reason != "" && h.Status != diagnose.HopDone {
			s += ":" + h.Reason
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func hopNamed(r diagnose.Report, name string) diagnose.Hop {
	for _, h := range r.Hops {
		if h.Hop == name {
			return h
		}
	}
	return diagnose.Hop{}
}

func TestTraceIngress(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	readyNode(t, e, "n1", "True")
	readyNode(t, e, "n2", "True")
	mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Name: "http", Port: 80, TargetPort: "8080"}}}})
	mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "empty", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "wbe"}, Ports: []*v1.ServicePort{{Port: 80}}}})
	boundPod(t, e, "web-1", "n1", "Running", map[string]string{"app": "web"})
	mustCreate(t, e.c, &v1.EndpointSlice{
		Metadata:    &v1.ObjectMeta{Namespace: "default", Name: "web-abc", Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: "IPv4",
		Endpoints: []*v1.Endpoint{{Addresses: []string{"10.244.1.5"}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)},
			NodeName: proto.String("n1"), TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"}}},
		Ports: []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(8080), Protocol: proto.String("TCP")}}})
	mustCreate(t, e.c, tlsSecret(t, "foo-tls", time.Now().Add(-time.Hour), "foo.example.com"))
	mustCreate(t, e.c, tlsSecret(t, "old-tls", time.Now().Add(-48*time.Hour), "foo.example.com"))

	web := mustCreate(t, e.c, &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &v1.IngressSpec{
		Tls:   []*v1.IngressTLS{{Hosts: []string{"foo.example.com"}, SecretName: "foo-tls"}},
		Rules: []*v1.IngressRule{ingressRule("foo.example.com", "/", "Prefix", "web", 80)}}})
	setAddress := func(name string) {
		t.Helper()
		if _, err := client.For[*v1.Ingress](e.c).Mutate(ctx, "default", name, true, func(i *v1.Ingress) error {
			i.Status = &v1.IngressStatus{LoadBalancer: &v1.IngressLoadBalancerStatus{Ingress: []*v1.IngressLoadBalancerIngress{{Ip: "172.18.0.2"}}}}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// A NoEndpoints Event the proxies sent a minute ago, before web got
	// its endpoint: ended, not a failure.
	old := testEvent("web.1", "Ingress", "web", "NoEndpoints", time.Minute)
	old.Type, old.Source, old.InvolvedObject.Uid = "Warning", &v1.EventSource{Component: "ingress-controller", Host: "n2"}, web.Metadata.Uid
	mustCreate(t, e.c, old)

	// No address yet: no proxy holds the status Lease.
	rep := traceJSON(t, e, "ingress", "web")
	if rep.OK || rep.StuckAt != "address" || rep.Layer != "proxy" || rep.Reason != "NoAddress" ||
		!strings.Contains(rep.Message, "no proxy holds Lease kube-system/tugboat-ingress-status") {
		t.Errorf("no address: %+v", rep)
	}

	setAddress("web")
	rep = traceJSON(t, e, "ing", "web")
	if !rep.OK || rep.StuckAt != "" {
		t.Errorf("healthy: %+v", rep)
	}
	if g := hopList(rep); g != "class=done address=done tls=done rule=done service=done endpoints=done pods=done proxy=done" {
		t.Errorf("healthy hops: %s", g)
	}
	r := mustOK(t, e.run("trace", "ingress/web"))
	assertContains(t, "trace ingress web", r.out, "Ingress default/web: class tugboat, 1 backend(s), address 172.18.0.2",
		"class tugboat → tugboat.dev/ingress-controller", "served at 172.18.0.2", "TLS secret foo-tls for foo.example.com",
		"foo.example.com/ (Prefix) → web:80", "service web:80 → ClusterIP 10.96.", "port 80→8080",
		"web:80: 1 ready endpoint(s) in 1 EndpointSlice(s)", "web:80: 1 pod(s) on Ready nodes", "the proxies report no problem", "Every hop is done.")
	if h := hopNamed(rep, "proxy"); !strings.Contains(h.Message, "ended since: NoEndpoints on n2") {
		t.Errorf("the ended event: %+v", h)
	}
	if h := hopNamed(rep, "pods"); h.Message != "web-1 on n1" {
		t.Errorf("pods hop: %+v", h)
	}

	// The endpoint's node goes NotReady: its pod may be gone.
	setNodeStatus(t, e, "n1", &v1.NodeStatus{Conditions: []*v1.Condition{{Type: "Ready", Status: "Unknown"}}})
	rep = traceJSON(t, e, "ingress", "web")
	if rep.StuckAt != "pods" || rep.Reason != "NodeNotReady" || rep.Node != "n1" || rep.Layer != "kubelet+runtime" {
		t.Errorf("node not ready: %+v", rep)
	}
	setNodeStatus(t, e, "n1", &v1.NodeStatus{Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}})

	// Failures: a missing TLS Secret, a backend Service that does not
	// exist, one without ready endpoints (with the proxies' Event).
	broken := mustCreate(t, e.c, &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "broken", Namespace: "default"}, Spec: &v1.IngressSpec{
		Tls: []*v1.IngressTLS{{Hosts: []string{"bar.example.com"}, SecretName: "bar-tls"}},
		Rules: []*v1.IngressRule{ingressRule("bar.example.com", "/gone", "Exact", "gone", 80), ingressRule("bar.example.com", "/empty", "Prefix", "empty", 80),
			ingressRule("bar.example.com", "/port", "Prefix", "web", 81)}}})
	setAddress("broken")
	ev := testEvent("broken.1", "Ingress", "broken", "NoEndpoints", 30*time.Second)
	ev.Type, ev.Source, ev.InvolvedObject.Uid = "Warning", &v1.EventSource{Component: "ingress-controller", Host: "n1"}, broken.Metadata.Uid
	ev.Message = `Service "default/empty" does not have any active Endpoint: requests for bar.example.com/empty get 503`
	mustCreate(t, e.c, ev)
	rep = traceJSON(t, e, "ingress", "broken")
	if rep.OK || rep.StuckAt != "tls" || rep.Layer != "ingress" || rep.Reason != "BadTLSSecret" ||
		!strings.Contains(rep.Message, `Error getting SSL certificate "default/bar-tls": secret "default/bar-tls" not found`) {
		t.Errorf("broken: %+v", rep.Finding)
	}
	if g := hopList(rep); g != "class=done address=done tls=failed:BadTLSSecret rule=done service=failed:ServiceNotFound endpoints=waiting pods=waiting "+
		"rule=done service=done endpoints=failed:NoMatchingPods pods=waiting rule=done service=failed:ServicePortNotFound endpoints=waiting pods=waiting proxy=failed:NoEndpoints" {
		t.Errorf("broken hops: %s", g)
	}
	for _, h := range rep.Hops {
		switch {
		case h.Reason == "ServiceNotFound" && h.Message != `service "default/gone" not found: requests for it get 503`,
			h.Reason == "NoMatchingPods" && !strings.Contains(h.Message, `Service "default/empty" does not have any active Endpoint`+
				" (0 EndpointSlice(s) with port 80): requests for it get 503; selector app=wbe matches no pod in namespace default; pods there have app=web"),
			h.Reason == "ServicePortNotFound" && h.Message != `service "default/web" has no port 81 (it has 80/TCP): requests for it get 503`,
			h.Hop == "proxy" && (h.Node != "n1" || !strings.Contains(h.Message, "NoEndpoints on n1: Service \"default/empty\"")):
			t.Errorf("hop %s: %+v", h.Hop, h)
		}
	}
	r = mustOK(t, e.run("trace", "ingress", "broken"))
	assertContains(t, "trace ingress broken", r.out, `Stopped at "tls": layer ingress, look at the TLS Secret.`, "Reason: BadTLSSecret",
		"Next: tugctl get secrets -n default")

	// The Secret arrives, but expired; then a good one: the stop moves to
	// the missing Service.
	mustCreate(t, e.c, tlsSecret(t, "bar-tls", time.Now().Add(-48*time.Hour), "bar.example.com"))
	if rep = traceJSON(t, e, "ingress", "broken"); rep.StuckAt != "tls" || !strings.Contains(rep.Message, "the certificate expired on") {
		t.Errorf("expired: %+v", rep.Finding)
	}
	if _, err := client.For[*v1.Secret](e.c).Mutate(ctx, "default", "bar-tls", false, func(s *v1.Secret) error {
		s.Data = tlsSecret(t, "bar-tls", time.Now().Add(-time.Hour), "bar.example.com").Data
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if rep = traceJSON(t, e, "ingress", "broken"); rep.StuckAt != "service" || rep.Reason != "ServiceNotFound" || rep.Layer != "ingress" ||
		!strings.Contains(rep.Next, "tugctl get services -n default") {
		t.Errorf("gone: %+v", rep.Finding)
	}

	// A certificate that does not name the host.
	mustCreate(t, e.c, &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "wrongcert", Namespace: "default"}, Spec: &v1.IngressSpec{
		Tls:   []*v1.IngressTLS{{Hosts: []string{"baz.example.com"}, SecretName: "foo-tls"}},
		Rules: []*v1.IngressRule{ingressRule("baz.example.com", "/", "Prefix", "web", 80)}}})
	setAddress("wrongcert")
	if rep = traceJSON(t, e, "ingress", "wrongcert"); rep.StuckAt != "tls" || rep.Reason != "CertificateHostMismatch" ||
		!strings.Contains(rep.Message, "(names foo.example.com) does not cover baz.example.com") {
		t.Errorf("wrong cert: %+v", rep.Finding)
	}

	// A newer Ingress with web's host and path never gets the requests.
	mustCreate(t, e.c, &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "later", Namespace: "default"}, Spec: &v1.IngressSpec{
		Rules: []*v1.IngressRule{ingressRule("foo.example.com", "/", "Prefix", "empty", 80)}}})
	setAddress("later")
	if rep = traceJSON(t, e, "ingress", "later"); rep.StuckAt != "rule" || rep.Reason != "RuleShadowed" ||
		!strings.Contains(rep.Message, "Ingress default/web, older, claims the same host and path (foo.example.com/): the proxies send these requests to its backend web:80") {
		t.Errorf("shadowed: %+v", rep.Finding)
	}

	// Another controller's class; a class that does not exist.
	mustCreate(t, e.c, &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "nginx"}, Spec: &v1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}})
	mustCreate(t, e.c, &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "other", Namespace: "default"}, Spec: &v1.IngressSpec{
		IngressClassName: proto.String("nginx"), Rules: []*v1.IngressRule{ingressRule("", "/", "Prefix", "web", 80)}}})
	if rep = traceJSON(t, e, "ingress", "other"); rep.StuckAt != "class" || rep.Reason != "OtherController" ||
		!strings.Contains(rep.Message, "class nginx's controller is k8s.io/ingress-nginx, not tugboat.dev/ingress-controller") {
		t.Errorf("other controller: %+v", rep.Finding)
	}
	if g := hopList(rep); g != "class=failed:OtherController address=skipped rule=done service=done endpoints=done pods=done proxy=skipped" {
		t.Errorf("other controller hops: %s", g)
	}
	mustCreate(t, e.c, &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "noclass", Namespace: "default"}, Spec: &v1.IngressSpec{
		IngressClassName: proto.String("haproxy"), Rules: []*v1.IngressRule{ingressRule("", "/", "Prefix", "web", 80)}}})
	if rep = traceJSON(t, e, "ingress", "noclass"); rep.StuckAt != "class" || rep.Reason != "IngressClassNotFound" {
		t.Errorf("no class: %+v", rep.Finding)
	}

	mustFail(t, e.run("trace", "ingress", "nope"), `ingresses.networking.k8s.io "nope" not found`)
}
