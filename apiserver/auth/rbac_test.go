package auth

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestReplace: a fresh list of one kind replaces what the kind held (a
// binding gone from the list no longer grants), and leaves the other
// kinds alone.
func TestReplace(t *testing.T) {
	r := NewRBAC()
	role := &v1.Role{Metadata: &v1.ObjectMeta{Name: "reader", Namespace: "ns"},
		Rules: []*v1.PolicyRule{{Verbs: []string{"get"}, ApiGroups: []string{""}, Resources: []string{"pods"}}}}
	bind := func(name, user string) *v1.RoleBinding {
		return &v1.RoleBinding{Metadata: &v1.ObjectMeta{Name: name, Namespace: "ns"},
			Subjects: []*v1.RBACSubject{{Kind: "User", Name: user}},
			RoleRef:  &v1.RoleRef{Kind: "Role", Name: "reader", ApiGroup: "rbac.authorization.k8s.io"}}
	}
	r.Apply(role, false)
	r.Apply(bind("jane", "jane"), false)
	can := func(user string) bool {
		ok, _ := r.Authorize(Attributes{User: &User{Name: user}, Verb: "get", Resource: "pods", Namespace: "ns", Name: "p"})
		return ok
	}
	if !can("jane") || can("joe") {
		t.Fatalf("before the list: jane %v joe %v, want true false", can("jane"), can("joe"))
	}
	r.Replace("RoleBinding", []v1.Object{bind("joe", "joe")})
	if can("jane") || !can("joe") {
		t.Errorf("after the list: jane %v joe %v, want false true (jane's binding is gone from the list)", can("jane"), can("joe"))
	}
	r.Replace("RoleBinding", nil)
	if can("joe") {
		t.Error("an empty list left joe's binding")
	}
	r.Replace("RoleBinding", []v1.Object{bind("joe", "joe")})
	if !can("joe") {
		t.Error("Replace of RoleBindings dropped the Role")
	}
}
