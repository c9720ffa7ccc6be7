package table

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Ingress and IngressClass rows as kubectl prints them.
func TestIngressRows(t *testing.T) {
	now := time.Now()
	rule := func(host string) *v1.IngressRule { return &v1.IngressRule{Host: host} }
	ing, _ := kinds.Lookup("Ingress")
	for _, c := range []struct {
		name string
		ing  *v1.Ingress
		want []any
	}{
		{"no class, no host, no address", &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "a"}, Spec: &v1.IngressSpec{Rules: []*v1.IngressRule{rule("")}}},
			[]any{"a", "<none>", "*", "", "80"}},
		{"hosts, tls, addresses", &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "b"},
			Spec: &v1.IngressSpec{IngressClassName: proto.String("tugboat"), Rules: []*v1.IngressRule{rule("foo.example.com"), rule("bar.example.com")},
				Tls: []*v1.IngressTLS{{SecretName: "s"}}},
			Status: &v1.IngressStatus{LoadBalancer: &v1.IngressLoadBalancerStatus{Ingress: []*v1.IngressLoadBalancerIngress{{Ip: "10.0.0.3"}, {Ip: "10.0.0.2"}}}}},
			[]any{"b", "tugboat", "foo.example.com,bar.example.com", "10.0.0.2,10.0...", "80, 443"}},
		{"more than three hosts", &v1.Ingress{Metadata: &v1.ObjectMeta{Name: "c"},
			Spec: &v1.IngressSpec{Rules: []*v1.IngressRule{rule("a.io"), rule("b.io"), rule("c.io"), rule("d.io"), rule("e.io")}}},
			[]any{"c", "<none>", "a.io,b.io,c.io + 2 more...", "", "80"}},
	} {
		got := RowOf(ing, c.ing, now).Cells
		if !slices.Equal(got[:len(got)-1], c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	ic, _ := kinds.Lookup("IngressClass")
	got := RowOf(ic, &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "tugboat", Annotations: map[string]string{"ingressclass.kubernetes.io/is-default-class": "true"}},
		Spec: &v1.IngressClassSpec{Controller: "tugboat.dev/ingress-controller"}}, now).Cells
	if want := []any{"tugboat (default)", "tugboat.dev/ingress-controller", "<none>"}; !slices.Equal(got[:3], want) {
		t.Errorf("class: %q, want %q", got, want)
	}
	got = RowOf(ic, &v1.IngressClass{Metadata: &v1.ObjectMeta{Name: "ext"}, Spec: &v1.IngressClassSpec{Controller: "example.com/x",
		Parameters: &v1.IngressClassParametersReference{ApiGroup: proto.String("k8s.example.com"), Kind: "Params", Name: "p"}}}, now).Cells
	if want := []any{"ext", "example.com/x", "Params.k8s.example.com/p"}; !slices.Equal(got[:3], want) {
		t.Errorf("class with parameters: %q, want %q", got, want)
	}
}
