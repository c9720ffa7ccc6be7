package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The TokenRequest's defaults and validation, as the serviceaccounts/token
// subresource applies them (kinds.Subresource), with Kubernetes' texts.
func TestTokenRequestValidation(t *testing.T) {
	sa, _ := kinds.Lookup("ServiceAccount")
	sub, ok := kinds.CreateSubresource(sa, "token")
	if !ok {
		t.Fatal("serviceaccounts/token is not registered")
	}
	d := sub.New().(*v1.TokenRequest)
	sub.Default(d)
	if d.Spec.GetExpirationSeconds() != 3600 || sub.Validate(d).Err("TokenRequest", "x") != nil {
		t.Errorf("defaulted empty request: %v, %v", d, sub.Validate(d))
	}
	exp := func(s int64) *v1.TokenRequest {
		return &v1.TokenRequest{Spec: &v1.TokenRequestSpec{ExpirationSeconds: proto.Int64(s)}}
	}
	for _, c := range []struct {
		name string
		tr   *v1.TokenRequest
		want string // "" valid
	}{
		{"ten minutes", exp(600), ""},
		{"2^32 seconds", exp(1 << 32), ""},
		{"599", exp(599), "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"},
		{"zero", exp(0), "spec.expirationSeconds: Invalid value: 0: may not specify a duration less than 10 minutes"},
		{"negative", exp(-1), "spec.expirationSeconds: Invalid value: -1"},
		{"past 2^32", exp(1<<32 + 1), "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"},
		{"audiences", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{Audiences: []string{"a", "https://b"}}}, ""},
		{"empty audience", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{Audiences: []string{"a", ""}}}, `spec.audiences[1]: Invalid value: "": must not be empty`},
		{"bound pod", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{BoundObjectRef: &v1.BoundObjectReference{Kind: "Pod", Name: "web"}}}, ""},
		{"bound without name", &v1.TokenRequest{Spec: &v1.TokenRequestSpec{BoundObjectRef: &v1.BoundObjectReference{Kind: "Pod"}}}, "spec.boundObjectRef.name: Required value"},
	} {
		sub.Default(c.tr)
		err := sub.Validate(c.tr).Err("TokenRequest.authentication.k8s.io", "default")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: want valid, got %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: want %q, got %v", c.name, c.want, err)
		}
	}
}
