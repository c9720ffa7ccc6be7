package apiserver

import (
	"testing"

	"google.golang.org/protobuf/types/known/anypb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// The request metrics name each request's kind: the kind a request names,
// else the type of the object it carries (a Create names none).
func TestRequestKind(t *testing.T) {
	obj, err := anypb.New(&v1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  any
		want string
	}{
		{"get", &v1.GetRequest{Kind: "Pod"}, "Pod"},
		{"create", &v1.CreateRequest{Object: obj}, "ConfigMap"},
		{"update", &v1.UpdateRequest{Object: obj}, "ConfigMap"},
		{"bind", &v1.BindRequest{}, "Pod"},
		{"other", &v1.WhoAmIRequest{}, ""},
	} {
		if got := requestKind(tc.req); got != tc.want {
			t.Errorf("%s: requestKind = %q, want %q", tc.name, got, tc.want)
		}
	}
}
