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
	"github.com/tugboat/tugboat/api/validation"
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
		{sched, "delete", "pods", "", "default", true}, // preemption, as Kubernetes' system:kube-scheduler
		{sched, "delete", "nodes", "", "", false},
		{sched, "list", "poddisruptionbudgets", "", "", true},
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
		{n("watch", "pods", "", "", "", ""), true, "watch all pods (the node's proxy enforces NetworkPolicies with peers anywhere)"},
		{n("list", "networkpolicies", "", "", "", ""), true, "list network policies"},
		{n("list", "endpointslices", "", "", "", ""), true, "list endpointslices (the node's proxy)"},
		{n("create", "endpointslices", "", "default", "s", ""), false, "create endpointslices"},
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
// through authentication and both authorizers, odd roles and bindings
// through the escalation check, odd node names through join's check and
// odd identities through renewal's: none may panic; a non-node, non-master
// user gets nothing the default policy does not grant; a role the check
// lets a user grant grants nothing that user may not do; an accepted node
// name is a DNS-1123 subdomain; only a plain node identity renews.
func FuzzAuth(f *testing.F) {
	f.Add("admin", "system:masters", "get", "pods", "log", "default", "p1", "n1", "Bearer abc123.0123456789abcdef", []byte("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"), "*,pods/*,get,*")
	f.Add("system:node:n1", "system:nodes", "update", "nodes", "status", "", "n1", "", "Bearer ", []byte{}, ",pods/status,update,")
	f.Add("", "", "*", "*", "*", "*", "*", "*", "Basic x", []byte("garbage"), "*,*,*,")
	f.Add("ann", "devs", "escalate", "roles", "", "team", "r", "NODE-UPPER", "", []byte{}, "rbac.authorization.k8s.io,roles,bind;escalate,cluster-admin")
	f.Add("system:node:a/b/../c", "system:nodes,system:masters", "bind", "clusterroles", "", "", "cluster-admin", "x,O=system:masters", "", []byte{}, ",*/status,*,")
	base := policy()
	ca, err := pki.NewCA("fuzz", time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	authn, _ := NewAuthenticator("", func(context.Context, string, string) (*v1.Secret, error) {
		return &v1.Secret{Type: tokens.UserTokenType, Data: map[string][]byte{"token-secret": []byte("0123456789abcdef"), "user": []byte("u")}}, nil
	})
	f.Fuzz(func(t *testing.T, user, groups, verb, res, sub, ns, name, field, header string, csr []byte, ruleSpec string) {
		u := &User{Name: user, Groups: strings.Split(groups, ",")}
		a := Attributes{User: u, Verb: verb, Resource: res, Subresource: sub, Namespace: ns, Name: name}
		ok, _ := base.Authorize(a)
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

		// Escalation: the user holds a Role built from the fuzzed rule
		// (groups,resources,verbs,names; ';' separates list items) in ns;
		// a Role it may grant must grant nothing it may not do.
		held := parseRule(ruleSpec)
		r := policy()
		r.Apply(&v1.Role{Metadata: &v1.ObjectMeta{Name: "held", Namespace: ns}, Rules: []*v1.PolicyRule{held}}, false)
		r.Apply(&v1.RoleBinding{Metadata: &v1.ObjectMeta{Name: "held", Namespace: ns}, Subjects: []*v1.RBACSubject{{Kind: "User", Name: user}},
			RoleRef: &v1.RoleRef{Kind: "Role", Name: "held"}}, false)
		grant := &v1.PolicyRule{ApiGroups: []string{field}, Resources: []string{res}, Verbs: []string{verb}}
		if sub != "" {
			grant.Resources = []string{res + "/" + sub}
		}
		if name != "" {
			grant.ResourceNames = []string{name}
		}
		if esc := r.CheckRoleGrant(u, ns, "roles", "new", []*v1.PolicyRule{grant}); esc == nil && !u.InGroup(GroupMasters) {
			if ok, _ := r.Authorize(Attributes{User: u, Verb: "escalate", APIGroup: RBACGroup, Resource: "roles", Namespace: ns, Name: "new"}); !ok && ns != "" {
				// Without escalate, everything granted is held.
				for _, atom := range breakdown(grant) {
					rs, sr, _ := strings.Cut(atom.Resources[0], "/")
					n := ""
					if len(atom.ResourceNames) > 0 {
						n = atom.ResourceNames[0]
					}
					if ok, _ := r.Authorize(Attributes{User: u, Verb: atom.Verbs[0], APIGroup: atom.ApiGroups[0], Resource: rs, Subresource: sr, Namespace: ns, Name: n}); !ok {
						t.Fatalf("%q may grant %s holding only %s, but may not do it", user, CompactString(atom), CompactString(held))
					}
				}
			}
		} else if esc != nil && esc.Msg == "" {
			t.Fatal("a refusal without a message")
		}
		for _, kind := range []string{"Role", "ClusterRole", res} {
			if esc := r.CheckBind(u, ns, kind, name, nil); esc != nil && esc.Msg == "" {
				t.Fatal("a bind refusal without a message")
			}
		}

		// Join names: what is accepted is safe in a subject and a file name.
		if validation.NodeName("nodeName", field) == nil {
			if len(field) > 253 || strings.ContainsAny(field, "/,=\n\r \\") || strings.ToLower(field) != field || strings.Contains(field, "..") {
				t.Fatalf("node name %q accepted", field)
			}
			nu := &User{Name: NodePrefix + field, Groups: []string{GroupNodes}}
			if n, ok := nu.NodeName(); !ok || n != field {
				t.Fatalf("node identity of %q round-trips to %q", field, n)
			}
		}
		// Renewal: only a plain node identity with a valid name renews.
		if node, err := RenewableNode(u); err == nil {
			if !u.InGroup(GroupNodes) || user != NodePrefix+node || validation.NodeName("n", node) != nil {
				t.Fatalf("%q in %v may renew as node %q", user, u.Groups, node)
			}
			for _, g := range u.Groups {
				if g != GroupNodes && g != GroupAuthenticated {
					t.Fatalf("%q in group %q may renew", user, g)
				}
			}
		}
	})
}

// parseRule reads "groups,resources,verbs,names" (items split by ';').
func parseRule(spec string) *v1.PolicyRule {
	parts := strings.SplitN(spec, ",", 4)
	for len(parts) < 4 {
		parts = append(parts, "")
	}
	list := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ";")
	}
	groups := list(parts[0])
	if groups == nil {
		groups = []string{""}
	}
	return &v1.PolicyRule{ApiGroups: groups, Resources: list(parts[1]), Verbs: list(parts[2]), ResourceNames: list(parts[3])}
}
