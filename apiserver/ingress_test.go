package apiserver_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// The Kubernetes documentation's minimal Ingress, as users write it.
const minimalIngressYAML = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: minimal-ingress
  namespace: default
spec:
  rules:
  - http:
      paths:
      - path: /testpath
        pathType: Prefix
        backend:
          service:
            name: test
            port:
              number: 80
`

// Ingresses without a class get the default IngressClass (tugboat, made
// at start; the newest when several are default); one naming a class or
// carrying the kubernetes.io/ingress.class annotation keeps it; an invalid
// one is refused naming the field and nothing is stored.
func TestIngressDefaultClass(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	ic, err := client.For[*v1.IngressClass](s.Client).Get(ctx, "", "tugboat")
	if err != nil || ic.GetSpec().GetController() != "tugboat.dev/ingress-controller" ||
		ic.GetMetadata().GetAnnotations()["ingressclass.kubernetes.io/is-default-class"] != "true" {
		t.Fatalf("bootstrap class: %v %v", ic, err)
	}
	objs, err := manifest.Decode("ing.yaml", []byte(minimalIngressYAML))
	if err != nil {
		t.Fatal(err)
	}
	ings := client.For[*v1.Ingress](s.Client)
	got, err := ings.Create(ctx, objs[0].Object.(*v1.Ingress))
	if err != nil || got.GetSpec().GetIngressClassName() != "tugboat" {
		t.Fatalf("ingress without class: %v, %v", got, err)
	}

	named := proto.Clone(got).(*v1.Ingress)
	named.Metadata = &v1.ObjectMeta{Name: "named", Namespace: "default"}
	named.Spec.IngressClassName = proto.String("other")
	if got, err := ings.Create(ctx, named); err != nil || got.GetSpec().GetIngressClassName() != "other" {
		t.Fatalf("named class: %v, %v", got, err)
	}
	annotated := proto.Clone(got).(*v1.Ingress)
	annotated.Metadata = &v1.ObjectMeta{Name: "annotated", Namespace: "default", Annotations: map[string]string{"kubernetes.io/ingress.class": "nginx"}}
	annotated.Spec.IngressClassName = nil
	if got, err := ings.Create(ctx, annotated); err != nil || got.GetSpec().IngressClassName != nil {
		t.Fatalf("annotated: %v, %v", got, err)
	}

	// A newer default class wins.
	if _, err := client.For[*v1.IngressClass](s.Client).Create(ctx, &v1.IngressClass{
		Metadata: &v1.ObjectMeta{Name: "newer", Annotations: map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}},
		Spec:     &v1.IngressClassSpec{Controller: "example.com/ingress"}}); err != nil {
		t.Fatal(err)
	}
	second := proto.Clone(got).(*v1.Ingress)
	second.Metadata = &v1.ObjectMeta{Name: "second", Namespace: "default"}
	second.Spec.IngressClassName = nil
	if got, err := ings.Create(ctx, second); err != nil || got.GetSpec().GetIngressClassName() != "newer" {
		t.Fatalf("two defaults: %v, %v", got, err)
	}

	bad := proto.Clone(got).(*v1.Ingress)
	bad.Metadata = &v1.ObjectMeta{Name: "bad", Namespace: "default"}
	bad.Spec.Rules[0].Http.Paths[0].PathType = nil
	_, err = ings.Create(ctx, bad)
	if err == nil || !strings.Contains(err.Error(), "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified") {
		t.Fatalf("invalid ingress: %v", err)
	}
	if _, err := ings.Get(ctx, "default", "bad"); err == nil {
		t.Fatal("invalid ingress stored")
	}
}
