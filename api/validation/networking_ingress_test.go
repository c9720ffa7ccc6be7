package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func ingressClass() *v1.IngressClass {
	return &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "external"},
		Spec: &v1.IngressClassSpec{Controller: "example.com/ingress-controller",
			Parameters: &v1.IngressClassParametersReference{ApiGroup: proto.String("k8s.example.com"), Kind: "IngressParameters", Name: "external-lb"}}}
}

func TestIngressClassValidation(t *testing.T) {
	params := func(c *v1.IngressClass) *v1.IngressClassParametersReference { return c.Spec.Parameters }
	runValidation(t, []validationCase{
		{"valid, scope defaulted", func() v1.Object { return ingressClass() }, nil},
		{"tugboat without parameters", func() v1.Object {
			return &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "tugboat"}, Spec: &v1.IngressClassSpec{Controller: "tugboat.dev/ingress-controller"}}
		}, nil},
		{"namespaced parameters", func() v1.Object {
			c := ingressClass()
			params(c).Scope, params(c).Namespace = proto.String("Namespace"), proto.String("infra")
			return c
		}, nil},
		{"controller required", func() v1.Object { c := ingressClass(); c.Spec.Controller = ""; return c },
			[]string{"spec.controller: Required value"}},
		{"controller not domain-prefixed", func() v1.Object { c := ingressClass(); c.Spec.Controller = "nginx"; return c },
			[]string{"spec.controller", `must be a domain-prefixed path (such as "acme.io/foo")`}},
		{"controller with a bad domain", func() v1.Object { c := ingressClass(); c.Spec.Controller = "Example_com/x"; return c },
			[]string{"spec.controller", "DNS-1123 subdomain"}},
		{"controller too long", func() v1.Object {
			c := ingressClass()
			c.Spec.Controller = "example.com/" + strings.Repeat("a", 250)
			return c
		}, []string{"spec.controller", "may not be more than 250 bytes"}},
		{"parameters kind and name required", func() v1.Object { c := ingressClass(); params(c).Kind, params(c).Name = "", ""; return c },
			[]string{"spec.parameters.kind: Required value", "spec.parameters.name: Required value"}},
		{"unknown scope", func() v1.Object { c := ingressClass(); params(c).Scope = proto.String("Global"); return c },
			[]string{"spec.parameters.scope", `Unsupported value: "Global"`}},
		{"namespace scope without namespace", func() v1.Object { c := ingressClass(); params(c).Scope = proto.String("Namespace"); return c },
			[]string{"spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'"}},
		{"cluster scope with namespace", func() v1.Object { c := ingressClass(); params(c).Namespace = proto.String("infra"); return c },
			[]string{"spec.parameters.namespace", "Forbidden: `parameters.scope` is set to 'Cluster'"}},
		{"tugboat's controller takes no parameters", func() v1.Object {
			c := ingressClass()
			c.Spec.Controller = "tugboat.dev/ingress-controller"
			return c
		}, []string{"spec.parameters", "tugboat.dev/ingress-controller takes no parameters"}},
	})
}

func TestIngressClassDefaultAndUpdate(t *testing.T) {
	k, _ := kinds.Lookup("IngressClass")
	c := ingressClass()
	k.Default(c)
	if got := c.Spec.Parameters.GetScope(); got != "Cluster" {
		t.Errorf("defaulted scope %q, want Cluster", got)
	}
	next := proto.Clone(c).(*v1.IngressClass)
	next.Spec.Controller = "example.com/other"
	if errs := k.ValidateUpdate(c, next); len(errs) == 0 || !strings.Contains(errs.Err("IngressClass", "external").Error(), "spec.controller: Invalid value: \"example.com/other\": field is immutable") {
		t.Fatalf("want immutable controller, got %v", errs)
	}
	next = proto.Clone(c).(*v1.IngressClass)
	next.Metadata.Annotations = map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}
	if errs := k.ValidateUpdate(c, next); len(errs) != 0 {
		t.Fatalf("annotation change refused: %v", errs)
	}
}

func ingress() *v1.Ingress {
	backend := func(name string, port int32) *v1.IngressBackend {
		return &v1.IngressBackend{Service: &v1.IngressServiceBackend{Name: name, Port: &v1.ServiceBackendPort{Number: port}}}
	}
	return &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.IngressSpec{IngressClassName: proto.String("tugboat"),
			Tls: []*v1.IngressTLS{{Hosts: []string{"foo.example.com", "*.bar.example.com"}, SecretName: "foo-tls"}},
			Rules: []*v1.IngressRule{{Host: "foo.example.com", Http: &v1.HTTPIngressRuleValue{Paths: []*v1.HTTPIngressPath{
				{Path: "/", PathType: proto.String("Prefix"), Backend: backend("web", 80)},
				{Path: "/api", PathType: proto.String("Exact"), Backend: backend("api", 8080)},
			}}}}}}
}

func TestIngressValidation(t *testing.T) {
	rule := func(i *v1.Ingress) *v1.IngressRule { return i.Spec.Rules[0] }
	path := func(i *v1.Ingress) *v1.HTTPIngressPath { return i.Spec.Rules[0].Http.Paths[0] }
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return ingress() }, nil},
		{"wildcard host", func() v1.Object { i := ingress(); rule(i).Host = "*.example.com"; return i }, nil},
		{"no host", func() v1.Object { i := ingress(); rule(i).Host = ""; return i }, nil},
		{"named port", func() v1.Object {
			i := ingress()
			path(i).Backend.Service.Port = &v1.ServiceBackendPort{Name: "http"}
			return i
		}, nil},
		{"default backend only", func() v1.Object {
			i := ingress()
			i.Spec.Rules, i.Spec.DefaultBackend = nil, path(ingress()).Backend
			return i
		}, nil},
		{"ImplementationSpecific with an empty path", func() v1.Object {
			i := ingress()
			path(i).PathType, path(i).Path = proto.String("ImplementationSpecific"), ""
			return i
		}, nil},
		{"neither rules nor default backend", func() v1.Object { i := ingress(); i.Spec.Rules = nil; return i },
			[]string{"spec: Invalid value: either `defaultBackend` or `rules` must be specified"}},
		{"pathType required", func() v1.Object { i := ingress(); path(i).PathType = nil; return i },
			[]string{"spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"}},
		{"pathType unknown", func() v1.Object { i := ingress(); path(i).PathType = proto.String("Regex"); return i },
			[]string{"spec.rules[0].http.paths[0].pathType", `Unsupported value: "Regex": supported values: "Exact", "ImplementationSpecific", "Prefix"`}},
		{"relative path", func() v1.Object { i := ingress(); path(i).Path = "api"; return i },
			[]string{"spec.rules[0].http.paths[0].path", `"api": must be an absolute path`}},
		{"relative ImplementationSpecific path", func() v1.Object {
			i := ingress()
			path(i).PathType, path(i).Path = proto.String("ImplementationSpecific"), "api"
			return i
		}, []string{"spec.rules[0].http.paths[0].path", "must be an absolute path"}},
		{"double slash", func() v1.Object { i := ingress(); path(i).Path = "/a//b"; return i },
			[]string{"spec.rules[0].http.paths[0].path", "must not contain '//'"}},
		{"dot suffix", func() v1.Object { i := ingress(); path(i).Path = "/a/.."; return i },
			[]string{"spec.rules[0].http.paths[0].path", "cannot end with '/..'"}},
		{"paths required", func() v1.Object { i := ingress(); rule(i).Http.Paths = nil; return i },
			[]string{"spec.rules[0].http.paths: Required value"}},
		{"rule without http", func() v1.Object { i := ingress(); rule(i).Http = nil; return i },
			[]string{"spec.rules[0].http: Required value"}},
		{"IP host", func() v1.Object { i := ingress(); rule(i).Host = "10.0.0.1"; return i },
			[]string{"spec.rules[0].host", "must be a DNS name, not an IP address"}},
		{"bad wildcard", func() v1.Object { i := ingress(); rule(i).Host = "foo.*.example.com"; return i },
			[]string{"spec.rules[0].host", "a wildcard DNS-1123 subdomain must start with '*.'"}},
		{"upper-case host", func() v1.Object { i := ingress(); rule(i).Host = "Foo.example.com"; return i },
			[]string{"spec.rules[0].host", "DNS-1123 subdomain"}},
		{"backend required", func() v1.Object { i := ingress(); path(i).Backend = &v1.IngressBackend{}; return i },
			[]string{"spec.rules[0].http.paths[0].backend", "resource or service backend is required"}},
		{"resource backend refused", func() v1.Object {
			i := ingress()
			path(i).Backend = &v1.IngressBackend{Resource: &v1.TypedLocalObjectReference{ApiGroup: proto.String("k8s.example.com"), Kind: "StorageBucket", Name: "static"}}
			return i
		}, []string{"spec.rules[0].http.paths[0].backend.resource", "not served by tugboat.dev/ingress-controller"}},
		{"resource and service", func() v1.Object {
			i := ingress()
			path(i).Backend.Resource = &v1.TypedLocalObjectReference{Kind: "StorageBucket", Name: "static"}
			return i
		}, []string{"cannot set both resource and service backends"}},
		{"service name required", func() v1.Object { i := ingress(); path(i).Backend.Service.Name = ""; return i },
			[]string{"spec.rules[0].http.paths[0].backend.service.name: Required value"}},
		{"port required", func() v1.Object { i := ingress(); path(i).Backend.Service.Port = nil; return i },
			[]string{"spec.rules[0].http.paths[0].backend.service.port: Required value: port name or number is required"}},
		{"port name and number", func() v1.Object { i := ingress(); path(i).Backend.Service.Port.Name = "http"; return i },
			[]string{"cannot set both port name & port number"}},
		{"port out of range", func() v1.Object { i := ingress(); path(i).Backend.Service.Port.Number = 70000; return i },
			[]string{"spec.rules[0].http.paths[0].backend.service.port.number", "must be between 1 and 65535, inclusive"}},
		{"bad port name", func() v1.Object {
			i := ingress()
			path(i).Backend.Service.Port = &v1.ServiceBackendPort{Name: "HTTP_PORT"}
			return i
		}, []string{"spec.rules[0].http.paths[0].backend.service.port.name", "IANA_SVC_NAME"}},
		{"bad default backend", func() v1.Object { i := ingress(); i.Spec.DefaultBackend = &v1.IngressBackend{}; return i },
			[]string{"spec.defaultBackend", "resource or service backend is required"}},
		{"bad tls host", func() v1.Object { i := ingress(); i.Spec.Tls[0].Hosts[1] = "*"; return i },
			[]string{"spec.tls[0].hosts[1]", "wildcard DNS-1123 subdomain"}},
		{"bad secret name", func() v1.Object { i := ingress(); i.Spec.Tls[0].SecretName = "Foo_TLS"; return i },
			[]string{"spec.tls[0].secretName", "DNS-1123 subdomain"}},
		{"class and annotation", func() v1.Object {
			i := ingress()
			i.Metadata.Annotations = map[string]string{"kubernetes.io/ingress.class": "nginx"}
			return i
		}, []string{"metadata.annotations.kubernetes.io/ingress.class", "can not be set when the class field is also set"}},
		{"bad status ip", func() v1.Object {
			i := ingress()
			i.Status = &v1.IngressStatus{LoadBalancer: &v1.IngressLoadBalancerStatus{Ingress: []*v1.IngressLoadBalancerIngress{{Ip: "300.1.1.1"}}}}
			return i
		}, []string{"status.loadBalancer.ingress[0].ip", "must be a valid IP address"}},
	})
}
