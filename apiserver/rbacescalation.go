package apiserver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
)

// rbacEscalation is the admission step of the four RBAC kinds that keeps
// the right to write RBAC objects from being the right to everything
// (auth.RBAC.CheckRoleGrant and CheckBind): it runs on create and update,
// for every door (gRPC, the Kubernetes HTTP API, patches), after
// authorization said the caller may write the object at all. Requests
// without a user (authentication off, the apiserver's own bootstrap) pass.
type rbacEscalation struct{ s *Server }

func (e rbacEscalation) register() {
	for _, k := range []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"} {
		e.s.admission[k] = append(e.s.admission[k], e)
	}
}

func (rbacEscalation) Release(context.Context, v1.Object) {}

func (e rbacEscalation) Admit(ctx context.Context, obj, _ v1.Object) error {
	u := auth.UserFrom(ctx)
	if u == nil || e.s.rbac == nil {
		return nil
	}
	m := obj.GetMetadata()
	var refusal *auth.Escalation
	switch o := obj.(type) {
	case *v1.Role:
		refusal = e.s.rbac.CheckRoleGrant(u, m.GetNamespace(), "roles", m.GetName(), o.Rules)
	case *v1.ClusterRole:
		refusal = e.s.rbac.CheckRoleGrant(u, "", "clusterroles", m.GetName(), o.Rules)
	case *v1.RoleBinding:
		refusal = e.s.rbac.CheckBind(u, m.GetNamespace(), o.GetRoleRef().GetKind(), o.GetRoleRef().GetName(), e.s.roleGetter(ctx))
	case *v1.ClusterRoleBinding:
		refusal = e.s.rbac.CheckBind(u, "", o.GetRoleRef().GetKind(), o.GetRoleRef().GetName(), e.s.roleGetter(ctx))
	}
	if refusal == nil {
		return nil
	}
	k, _ := kinds.ForMessage(obj)
	e.s.metrics.authFailures.WithLabelValues("escalation").Inc()
	return apierrors.New(apierrors.ErrForbidden, "%s.%s %q is forbidden: %s", k.Plural, auth.RBACGroup, m.GetName(), refusal.Msg)
}

// bindAllowed answers an access review of "bind" on a named role as the
// binding's admission will: a user who holds every permission of the role
// may bind it without the bind verb.
func (s *Server) bindAllowed(ctx context.Context, u *auth.User, verb string, k *kinds.Kind, sub, ns, name string) (bool, string) {
	if s.rbac == nil || verb != "bind" || sub != "" || name == "" || (k.Name != "Role" && k.Name != "ClusterRole") {
		return false, ""
	}
	if s.rbac.CheckBind(u, ns, k.Name, name, s.roleGetter(ctx)) != nil {
		return false, ""
	}
	return true, fmt.Sprintf("no bind verb, but the user holds every permission of %s %q, so a binding to it is allowed", strings.ToLower(k.Name), name)
}

// escalationNote is what an allowed review of writing an RBAC object must
// add to be honest: the write is allowed only for roles whose permissions
// the user holds, unless it may escalate (roles) or bind (bindings).
func (s *Server) escalationNote(u *auth.User, verb string, k *kinds.Kind, sub, ns string) string {
	if s.rbac == nil || u.InGroup(auth.GroupMasters) || sub != "" || !slices.Contains([]string{"create", "update", "patch", "*"}, verb) {
		return ""
	}
	switch k.Name {
	case "Role", "ClusterRole":
		if ok, _ := s.rbac.Authorize(auth.Attributes{User: u, Verb: "escalate", APIGroup: auth.RBACGroup, Resource: k.Plural, Namespace: ns}); ok {
			return ""
		}
		return fmt.Sprintf("only %s granting permissions the user already holds (no escalate verb on %s)", k.Plural, k.Plural)
	case "RoleBinding", "ClusterRoleBinding":
		roles := "clusterroles"
		if k.Name == "RoleBinding" {
			roles = "roles and clusterroles"
		}
		return fmt.Sprintf("only to %s whose permissions the user holds, or that it may bind (the bind verb)", roles)
	}
	return ""
}

// roleGetter reads roles from storage for the escalation check (as
// Kubernetes' does), not from the RBAC the watch keeps.
func (s *Server) roleGetter(ctx context.Context) auth.RoleGetter {
	return func(kind, ns, name string) ([]*v1.PolicyRule, bool, error) {
		k, err := kinds.Lookup(kind)
		if err != nil {
			return nil, false, nil
		}
		obj, err := s.store.Get(ctx, k, namespaceOf(k, ns), name)
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		switch o := obj.(type) {
		case *v1.Role:
			return o.Rules, true, nil
		case *v1.ClusterRole:
			return o.Rules, true, nil
		}
		return nil, false, nil
	}
}
