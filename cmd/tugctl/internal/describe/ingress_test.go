package describe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// describe ingress as kubectl: class, default backend, TLS, rules with
// each backend's ready endpoints, or the error when its Service is missing.
func TestDescribeIngress(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	if _, err := client.For[*v1.Service](s.Client).Create(ctx, &v1.Service{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Name: "http", Port: 80, TargetPort: "8080"}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.EndpointSlice](s.Client).Create(ctx, &v1.EndpointSlice{
		Metadata:    &v1.ObjectMeta{Namespace: "default", Name: "web-1", Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: "IPv4", Endpoints: []*v1.Endpoint{{Addresses: []string{"10.244.1.2"}, Conditions: &v1.EndpointConditions{Ready: proto.Bool(true)}}},
		Ports: []*v1.EndpointSlicePort{{Name: proto.String("http"), Port: proto.Int32(8080), Protocol: proto.String("TCP")}}}); err != nil {
		t.Fatal(err)
	}
	be := func(name string) *v1.IngressBackend {
		return &v1.IngressBackend{Service: &v1.IngressServiceBackend{Name: name, Port: &v1.ServiceBackendPort{Number: 80}}}
	}
	ing, err := client.For[*v1.Ingress](s.Client).Create(ctx, &v1.Ingress{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &v1.IngressSpec{Tls: []*v1.IngressTLS{{Hosts: []string{"foo.example.com"}, SecretName: "foo-tls"}},
			Rules: []*v1.IngressRule{{Host: "foo.example.com", Http: &v1.HTTPIngressRuleValue{Paths: []*v1.HTTPIngressPath{
				{Path: "/", PathType: proto.String("Prefix"), Backend: be("web")},
				{Path: "/gone", PathType: proto.String("Exact"), Backend: be("gone")}}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Object(ctx, &out, s.Client, ing, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Name:", "Ingress Class:    tugboat", "Default backend:  <default>", "TLS:\n  foo-tls terminates foo.example.com",
		"foo.example.com", "/       web:80 (10.244.1.2:8080)", `/gone   gone:80 (<error: `, "Events:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("describe lacks %q:\n%s", want, out.String())
		}
	}
}
