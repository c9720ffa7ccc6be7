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
