package auth

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/tokens"
	v1 "github.com/tugboat/tugboat/api/v1"
)

type facts struct{}

func (facts) PodNode(_ context.Context, ns, name string) (string, error) {
	if strings.HasSuffix(name, "1") {
		return "n1", nil
	}
	return "n2", nil
}

func (facts) Referenced(_ context.Context, node, kind, ns, name string) (bool, error) {
	return node == "n1" && name == "s1", nil
}

func policy() *RBAC {
	r := NewRBAC()
	for _, o := range DefaultPolicy() {
		r.Apply(o, false)
	}
	return r
}

func TestDefaultPolicy(t *testing.T) {
	r := policy()
	admin := &User{Name: "admin", Groups: []string{GroupMasters}}
	sched := &User{Name: "system:kube-scheduler"}
	nobody := &User{Name: "nobody"}
	cases := []struct {
		u                  *User
		verb, res, sub, ns string
		want               bool
	}{
		{admin, "delete", "nodes", "", "", true},
		{sched, "create", "pods", "binding", "default", true},
		{sched, "delete", "pods", "", "default", false},
		{sched, "get", "secrets", "", "default", false},
		{nobody, "get", "pods", "", "default", false},
	}
	for _, c := range cases {
		got, why := r.Authorize(Attributes{User: c.u, Verb: c.verb, Resource: c.res, Subresource: c.sub, Namespace: c.ns})
		if got != c.want {
			t.Errorf("%s %s %s/%s: got %v (%s)", c.u.Name, c.verb, c.res, c.sub, got, why)
		}
	}
}

func TestNodeAuthorizer(t *testing.T) {
	ctx := context.Background()
	n := func(verb, res, sub, ns, name, field string) bool {
		ok, _ := AuthorizeNode(ctx, "n1", Attributes{User: &User{Name: "system:node:n1"}, Verb: verb, Resource: res, Subresource: sub, Namespace: ns, Name: name}, field, facts{})
		return ok
	}
	cases := []struct {
		got, want bool
		what      string
	}{
		{n("update", "pods", "status", "default", "p1", ""), true, "own pod status"},
		{n("update", "pods", "status", "default", "p2", ""), false, "other pod status"},
		{n("watch", "pods", "", "", "", "n1"), true, "watch own pods"},
		{n("watch", "pods", "", "", "", ""), false, "watch all pods"},
		{n("get", "secrets", "", "default", "s1", ""), true, "own pod's secret"},
		{n("get", "secrets", "", "default", "s2", ""), false, "other secret"},
		{n("list", "secrets", "", "default", "", ""), false, "list secrets"},
		{n("update", "nodes", "status", "", "n1", ""), true, "own node"},
		{n("update", "nodes", "", "", "n2", ""), false, "other node"},
		{n("update", "leases", "", "kube-node-lease", "n1", ""), true, "own lease"},
		{n("update", "leases", "", "kube-node-lease", "n2", ""), false, "other lease"},
		{n("create", "deployments", "", "default", "d", ""), false, "deployments"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %v want %v", c.what, c.got, c.want)
		}
	}
}

// FuzzAuth feeds odd users, verbs, kinds, tokens and certificate requests
// through authentication and both authorizers: none may panic, and a
// non-node, non-master user gets nothing the default policy does not grant.
func FuzzAuth(f *testing.F) {
	f.Add("admin", "system:masters", "get", "pods", "log", "default", "p1", "n1", "Bearer abc123.0123456789abcdef", []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"))
	f.Add("system:node:n1", "system:nodes", "update", "nodes", "status", "", "n1", "", "Bearer ", []byte{})
	f.Add("", "", "*", "*", "*", "*", "*", "*", "Basic x", []byte("garbage"))
	r := policy()
	ca, err := pki.NewCA("fuzz", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	authn, _ := NewAuthenticator("", func(context.Context, string, string) (*v1.Secret, error) {
		return &v1.Secret{Type: tokens.UserTokenType, Data: map[string][]byte{"token-secret": []byte("0123456789abcdef"), "user": []byte("u")}}, nil
	})
	f.Fuzz(func(t *testing.T, user, groups, verb, res, sub, ns, name, field, header string, csr []byte) {
		u := &User{Name: user, Groups: strings.Split(groups, ",")}
		a := Attributes{User: u, Verb: verb, Resource: res, Subresource: sub, Namespace: ns, Name: name}
		ok, _ := r.Authorize(a)
		if ok && !u.InGroup(GroupMasters) && user != "system:kube-scheduler" && user != "system:kube-controller-manager" && user != "system:kube-proxy" {
			t.Fatalf("default policy granted %+v to %q", a, user)
		}
		if node, isNode := u.NodeName(); isNode {
			_, _ = AuthorizeNode(context.Background(), node, a, field, facts{})
		}
		_ = a.Denied("x")
		_, _, _ = SplitToken(header)
		ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs("authorization", header))
		if got, err := authn.Authenticate(ctx); err == nil && got == nil {
			t.Fatal("nil user without error")
		}
		_, _, _ = ca.SignCSR(csr, time.Hour)
	})
}
