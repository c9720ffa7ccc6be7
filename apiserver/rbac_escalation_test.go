package apiserver_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// withTokens gives the secure server a static tokens file: each user's
// token is "<user>-token".
func withTokens(t *testing.T, users ...string) apiservertest.Option {
	t.Helper()
	var b strings.Builder
	for i, u := range users {
		fmt.Fprintf(&b, "%s-token,%s,%d\n", u, u, 1000+i)
	}
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(c *apiserver.Config) { c.Auth.TokenFile = path }
}

// tokenClient is a client of s presenting user's static token.
func tokenClient(t *testing.T, s *apiservertest.Server, user string) *client.Client {
	t.Helper()
	c, err := client.New(client.Config{Server: s.Addr(), TLS: mustTLS(t, s, ""), Token: user + "-token"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// review asks, as the admin, whether user may do verb on resource.
func review(t *testing.T, s *apiservertest.Server, user, verb, resource, ns, name string) *v1.AccessReviewResponse {
	t.Helper()
	r, err := v1.NewAuthClient(s.Client.Conn()).Review(ctxT(t), &v1.AccessReviewRequest{Verb: verb, Resource: resource, Namespace: ns, Name: name, AsUser: user})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitAllowed waits until RBAC (which follows the API through a watch)
// lets user do verb on resource in ns.
func waitAllowed(t *testing.T, s *apiservertest.Server, user, verb, resource, ns, name string) {
	t.Helper()
	wait.Eventually(t, 30*time.Second, user+" may "+verb+" "+resource, func() error {
		if r := review(t, s, user, verb, resource, ns, name); !r.Allowed {
			return errors.New(r.Reason)
		}
		return nil
	})
}

func rule(groups, resources, verbs []string, names ...string) *v1.PolicyRule {
	return &v1.PolicyRule{ApiGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
}

func roleBinding(ns, name, user, roleKind, role string) *v1.RoleBinding {
	return &v1.RoleBinding{Metadata: &v1.ObjectMeta{Name: name, Namespace: ns},
		Subjects: []*v1.RBACSubject{{Kind: "User", Name: user}},
		RoleRef:  &v1.RoleRef{ApiGroup: "rbac.authorization.k8s.io", Kind: roleKind, Name: role}}
}

const notHeld = "is attempting to grant RBAC permissions not currently held"

func wantEscalation(t *testing.T, what string, err error, missing string) {
	t.Helper()
	if !isForbidden(err) || !strings.Contains(err.Error(), notHeld) || !strings.Contains(err.Error(), missing) {
		t.Errorf("%s: want Forbidden %q listing %s, got %v", what, notHeld, missing, err)
	}
}

// TestRBACEscalation: writing a Role needs its permissions (or escalate),
// writing a binding needs the role's permissions (or bind), as Kubernetes'
// RBAC escalation check; can-i answers as the check will.
func TestRBACEscalation(t *testing.T) {
	s := apiservertest.StartSecure(t, withTokens(t, "rick", "ann", "eve", "bea"))
	ctx := ctxT(t)
	admin := s.Client
	if _, err := client.For[*v1.Namespace](admin).Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	rbacGroup := []string{"rbac.authorization.k8s.io"}
	roles, bindings := client.For[*v1.Role](admin), client.For[*v1.RoleBinding](admin)
	for _, r := range []*v1.Role{
		// rick may write Roles and RoleBindings, nothing else.
		{Metadata: &v1.ObjectMeta{Name: "rbac-writer", Namespace: "team"}, Rules: []*v1.PolicyRule{rule(rbacGroup, []string{"roles", "rolebindings"}, []string{"create", "get", "update"})}},
		// eve may create Roles and escalate.
		{Metadata: &v1.ObjectMeta{Name: "escalator", Namespace: "team"}, Rules: []*v1.PolicyRule{rule(rbacGroup, []string{"roles"}, []string{"create", "escalate"})}},
		// bea may create RoleBindings.
		{Metadata: &v1.ObjectMeta{Name: "rb-writer", Namespace: "team"}, Rules: []*v1.PolicyRule{rule(rbacGroup, []string{"rolebindings"}, []string{"create"})}},
	} {
		if _, err := roles.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.For[*v1.ClusterRole](admin).Create(ctx, &v1.ClusterRole{Metadata: &v1.ObjectMeta{Name: "cluster-admin-binder"},
		Rules: []*v1.PolicyRule{rule(rbacGroup, []string{"clusterroles"}, []string{"bind"}, "cluster-admin")}}); err != nil {
		t.Fatal(err)
	}
	for _, b := range []*v1.RoleBinding{
		roleBinding("team", "rick", "rick", "Role", "rbac-writer"),
		roleBinding("team", "ann", "ann", "ClusterRole", "admin"),
		roleBinding("team", "eve", "eve", "Role", "escalator"),
		roleBinding("team", "bea", "bea", "Role", "rb-writer"),
		roleBinding("team", "bea-binder", "bea", "ClusterRole", "cluster-admin-binder"),
	} {
		if _, err := bindings.Create(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	waitAllowed(t, s, "rick", "create", "rolebindings", "team", "")
	waitAllowed(t, s, "ann", "get", "secrets", "team", "")
	waitAllowed(t, s, "eve", "escalate", "roles", "team", "")

	rick, ann, eve, bea := tokenClient(t, s, "rick"), tokenClient(t, s, "ann"), tokenClient(t, s, "eve"), tokenClient(t, s, "bea")

	// By binding: rick may write RoleBindings but holds nothing of
	// cluster-admin, so he may not bind himself to it.
	_, err := client.For[*v1.RoleBinding](rick).Create(ctx, roleBinding("team", "rick-admin", "rick", "ClusterRole", "cluster-admin"))
	wantEscalation(t, "rick binding cluster-admin", err, `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`)
	if err != nil && !strings.Contains(err.Error(), `user "rick" (groups=["system:authenticated"])`) {
		t.Errorf("the refusal names the user and groups: %v", err)
	}
	if _, err := bindings.Get(ctx, "team", "rick-admin"); !apierrors.IsNotFound(err) {
		t.Fatalf("a refused binding was stored: %v", err)
	}
	// Nor may he bind a Role that does not exist (yet): that needs bind.
	if _, err := client.For[*v1.RoleBinding](rick).Create(ctx, roleBinding("team", "rick-later", "rick", "Role", "later")); !isForbidden(err) || !strings.Contains(err.Error(), `role "later" not found`) {
		t.Errorf("binding a missing role without bind: %v", err)
	}
	// By role: he holds no pod permissions, so he may not write a Role
	// granting one.
	_, err = client.For[*v1.Role](rick).Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "pod-reader", Namespace: "team"},
		Rules: []*v1.PolicyRule{rule([]string{""}, []string{"pods"}, []string{"get"})}})
	wantEscalation(t, "rick writing a pod role", err, `{APIGroups:[""], Resources:["pods"], Verbs:["get"]}`)
	// What he holds he may grant: a Role writing Roles, bound to himself.
	if _, err := client.For[*v1.Role](rick).Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "role-getter", Namespace: "team"},
		Rules: []*v1.PolicyRule{rule(rbacGroup, []string{"roles"}, []string{"get"})}}); err != nil {
		t.Errorf("rick granting what he holds: %v", err)
	}

	// A namespace admin may not make a Role with */*/*, nor one with the
	// pods/status and pods/binding admin does not grant.
	annRoles := client.For[*v1.Role](ann)
	_, err = annRoles.Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "everything", Namespace: "team"}, Rules: []*v1.PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"})}})
	wantEscalation(t, "admin writing */*/*", err, `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`)
	_, err = annRoles.Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "status", Namespace: "team"},
		Rules: []*v1.PolicyRule{rule([]string{""}, []string{"pods/status", "pods/binding", "pods"}, []string{"update", "create"})}})
	wantEscalation(t, "admin writing pods/status", err, `{APIGroups:[""], Resources:["pods/status"], Verbs:["update"]}`)
	if err != nil && (!strings.Contains(err.Error(), `{APIGroups:[""], Resources:["pods/binding"], Verbs:["create"]}`) || strings.Contains(err.Error(), `Resources:["pods"]`)) {
		t.Errorf("the refusal lists exactly what is missing: %v", err)
	}
	// Within her rights she may, and may bind herself to it.
	reader, err := annRoles.Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "reader", Namespace: "team"},
		Rules: []*v1.PolicyRule{rule([]string{""}, []string{"pods", "pods/log"}, []string{"get", "list"})}})
	if err != nil {
		t.Fatalf("admin writing a role within her rights: %v", err)
	}
	if _, err := client.For[*v1.RoleBinding](ann).Create(ctx, roleBinding("team", "ann-reader", "ann", "Role", "reader")); err != nil {
		t.Errorf("admin binding a role within her rights: %v", err)
	}
	// Updates are checked as creates are.
	reader.Rules = append(reader.Rules, rule([]string{""}, []string{"pods/binding"}, []string{"create"}))
	_, err = annRoles.Update(ctx, reader)
	wantEscalation(t, "admin adding pods/binding by update", err, `{APIGroups:[""], Resources:["pods/binding"], Verbs:["create"]}`)
	_, err = client.For[*v1.RoleBinding](ann).Create(ctx, roleBinding("team", "ann-admin", "ann", "ClusterRole", "cluster-admin"))
	wantEscalation(t, "admin binding cluster-admin", err, `{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`)
	// A binding's roleRef cannot be re-pointed (delete and re-create it).
	rb, err := bindings.Get(ctx, "team", "ann-reader")
	if err != nil {
		t.Fatal(err)
	}
	rb.RoleRef.Name = "rbac-writer"
	if _, err := client.For[*v1.RoleBinding](ann).Update(ctx, rb); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "cannot change roleRef") {
		t.Errorf("re-pointing a binding: %v", err)
	}

	// With escalate, a Role may grant more than its writer holds.
	if _, err := client.For[*v1.Role](eve).Create(ctx, &v1.Role{Metadata: &v1.ObjectMeta{Name: "everything", Namespace: "team"}, Rules: []*v1.PolicyRule{rule([]string{"*"}, []string{"*"}, []string{"*"})}}); err != nil {
		t.Errorf("escalate: %v", err)
	}
	waitAllowed(t, s, "bea", "bind", "clusterroles", "team", "cluster-admin")
	// bind on one role is not bind on another.
	if _, err := client.For[*v1.RoleBinding](bea).Create(ctx, roleBinding("team", "bea-edit", "bea", "ClusterRole", "system:kube-scheduler")); !isForbidden(err) {
		t.Errorf("bind is per role: %v", err)
	}
	// With bind on cluster-admin, a binding to it is allowed, and in force.
	if _, err := client.For[*v1.RoleBinding](bea).Create(ctx, roleBinding("team", "bea-admin", "bea", "ClusterRole", "cluster-admin")); err != nil {
		t.Fatalf("bind: %v", err)
	}
	waitAllowed(t, s, "bea", "get", "secrets", "team", "")
	if _, _, err := client.For[*v1.Secret](bea).List(ctx, client.ListOptions{Namespace: "team"}); err != nil {
		t.Errorf("bea after binding cluster-admin: %v", err)
	}

	// can-i is honest: ann may bind what she holds (no bind verb), not
	// cluster-admin; she may create roles, but only within her rights; the
	// default admin role no longer carries escalate or bind.
	if r := review(t, s, "ann", "bind", "roles", "team", "reader"); !r.Allowed || !strings.Contains(r.Reason, "holds every permission") {
		t.Errorf("can-i bind roles/reader as ann: %+v", r)
	}
	if r := review(t, s, "ann", "bind", "clusterroles", "team", "cluster-admin"); r.Allowed {
		t.Errorf("can-i bind clusterroles/cluster-admin as ann: %+v", r)
	}
	if r := review(t, s, "ann", "create", "roles", "team", ""); !r.Allowed || !strings.Contains(r.Reason, "already holds") {
		t.Errorf("can-i create roles as ann: %+v", r)
	}
	if r := review(t, s, "ann", "escalate", "roles", "team", ""); r.Allowed {
		t.Errorf("the admin role grants escalate: %+v", r)
	}
	if r := review(t, s, "bea", "bind", "clusterroles", "team", "cluster-admin"); !r.Allowed {
		t.Errorf("can-i bind as bea: %+v", r)
	}
}

// TestDefaultRolesReconciled: a default ClusterRole is put back to this
// version's rules at start (so the fixed admin role reaches old clusters),
// unless annotated autoupdate=false.
func TestDefaultRolesReconciled(t *testing.T) {
	s := apiservertest.StartSecure(t)
	ctx := ctxT(t)
	crs := client.For[*v1.ClusterRole](s.Client)
	old := []*v1.PolicyRule{rule([]string{"*"}, []string{"pods", "roles", "rolebindings"}, []string{"*"})}
	if _, err := crs.Mutate(ctx, "", "admin", false, func(r *v1.ClusterRole) error { r.Rules = old; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := crs.Mutate(ctx, "", "edit", false, func(r *v1.ClusterRole) error {
		r.Rules = old
		r.Metadata.Annotations = map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "false"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	admin, err := crs.Get(ctx, "", "admin")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range admin.Rules {
		for _, res := range r.Resources {
			if (res == "roles" || res == "rolebindings") && strings.Join(r.Verbs, ",") == "*" {
				t.Errorf("admin still has * on %s after restart: %v", res, admin.Rules)
			}
		}
	}
	edit, _ := crs.Get(ctx, "", "edit")
	if len(edit.Rules) != 1 || edit.Rules[0].Resources[0] != "pods" {
		t.Errorf("autoupdate=false was reconciled: %v", edit.Rules)
	}
}
