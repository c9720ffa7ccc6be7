package apiserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// The proxy identity (system:kube-proxy) reads only the Secrets an
// Ingress in their namespace names in spec.tls: get, or list and watch
// pinned by metadata.name. Any other Secret, a list of all, and writes
// are refused, with the reason.
func TestProxyReadsOnlyIngressTLSSecrets(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := context.Background()
	secrets := client.For[*v1.Secret](s.Client)
	for _, name := range []string{"web-tls", "db-password"} {
		if _, err := secrets.Create(ctx, &v1.Secret{Metadata: &v1.ObjectMeta{Namespace: "default", Name: name}, Type: "kubernetes.io/tls",
			Data: map[string][]byte{"tls.crt": []byte("c"), "tls.key": []byte("k")}}); err != nil {
			t.Fatal(err)
		}
	}
	proxy := client.For[*v1.Secret](s.ClientAs("proxy"))
	// Before any Ingress names it: refused.
	if _, err := proxy.Get(ctx, "default", "web-tls"); !errors.Is(err, apierrors.ErrForbidden) {
		t.Fatalf("get web-tls before an Ingress names it: %v, want Forbidden", err)
	}
	if _, err := client.For[*v1.Ingress](s.Client).Create(ctx, &v1.Ingress{Metadata: &v1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: &v1.IngressSpec{Tls: []*v1.IngressTLS{{Hosts: []string{"web.example.com"}, SecretName: "web-tls"}},
			DefaultBackend: &v1.IngressBackend{Service: &v1.IngressServiceBackend{Name: "web", Port: &v1.ServiceBackendPort{Number: 80}}}}}); err != nil {
		t.Fatal(err)
	}
	if got, err := proxy.Get(ctx, "default", "web-tls"); err != nil || string(got.GetData()["tls.crt"]) != "c" {
		t.Errorf("get web-tls, named by Ingress web: %v %v", got, err)
	}
	if items, _, err := proxy.List(ctx, client.ListOptions{Namespace: "default", FieldSelector: "metadata.name=web-tls"}); err != nil || len(items) != 1 {
		t.Errorf("list web-tls by name: %d items, %v", len(items), err)
	}
	for _, c := range []struct {
		what string
		err  error
		why  string
	}{
		{"get db-password", second(proxy.Get(ctx, "default", "db-password")), "no Ingress in namespace default names Secret db-password in spec.tls"},
		{"get web-tls in another namespace", second(proxy.Get(ctx, "kube-system", "web-tls")), "no Ingress in namespace kube-system names Secret web-tls"},
		{"list all", third(proxy.List(ctx, client.ListOptions{})), "by namespace and fieldSelector metadata.name"},
		{"list db-password by name", third(proxy.List(ctx, client.ListOptions{Namespace: "default", FieldSelector: "metadata.name=db-password"})), "names Secret db-password"},
		{"delete web-tls", second(proxy.Delete(ctx, "default", "web-tls", client.DeleteOptions{})), "may only get, list and watch"},
	} {
		if !errors.Is(c.err, apierrors.ErrForbidden) || !strings.Contains(c.err.Error(), c.why) {
			t.Errorf("%s: %v, want Forbidden saying %q", c.what, c.err, c.why)
		}
	}
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }
