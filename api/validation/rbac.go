package validation

import (
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func rules(errs *Errs, rs []*v1.PolicyRule) {
	for i, r := range rs {
		p := fmt.Sprintf("rules[%d]", i)
		if len(r.Verbs) == 0 {
			errs.Add(p+".verbs", "required")
		}
		if len(r.Resources) == 0 {
			errs.Add(p+".resources", "required")
		}
	}
}

func subjects(errs *Errs, ss []*v1.RBACSubject) {
	for i, s := range ss {
		p := fmt.Sprintf("subjects[%d]", i)
		OneOf(errs, p+".kind", s.Kind, "User", "Group", "ServiceAccount")
		if s.Name == "" {
			errs.Add(p+".name", "required")
		}
		if s.Kind == "ServiceAccount" && s.Namespace == "" {
			errs.Add(p+".namespace", "required for a ServiceAccount")
		}
	}
}

func roleRef(errs *Errs, r *v1.RoleRef, allowed ...string) {
	if r == nil {
		errs.Add("roleRef", "required")
		return
	}
	OneOf(errs, "roleRef.kind", r.Kind, allowed...)
	if r.Name == "" {
		errs.Add("roleRef.name", "required")
	}
}

// Role validates a role.
func Role(r *v1.Role) Errs {
	var errs Errs
	ObjectMeta(&errs, r.Metadata, true, DNSSubdomain)
	rules(&errs, r.Rules)
	return errs
}

// ClusterRole validates a cluster role.
func ClusterRole(r *v1.ClusterRole) Errs {
	var errs Errs
	ObjectMeta(&errs, r.Metadata, false, rbacName)
	rules(&errs, r.Rules)
	return errs
}

// RoleBinding validates a role binding.
func RoleBinding(b *v1.RoleBinding) Errs {
	var errs Errs
	ObjectMeta(&errs, b.Metadata, true, DNSSubdomain)
	subjects(&errs, b.Subjects)
	roleRef(&errs, b.RoleRef, "Role", "ClusterRole")
	return errs
}

// ClusterRoleBinding validates a cluster role binding.
func ClusterRoleBinding(b *v1.ClusterRoleBinding) Errs {
	var errs Errs
	ObjectMeta(&errs, b.Metadata, false, rbacName)
	subjects(&errs, b.Subjects)
	roleRef(&errs, b.RoleRef, "ClusterRole")
	return errs
}

// rbacName allows the "system:..." names Kubernetes' default roles use.
func rbacName(errs *Errs, path, v string) {
	if v == "" {
		errs.Add(path, "required")
		return
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':') {
			errs.Add(path, "%s may contain only lower-case alphanumerics, '-', '.' and ':'", Short(v))
			return
		}
	}
}

// RoleBindingUpdate checks what may not change in a role binding (old is
// stored): its roleRef, as in Kubernetes — a binding is re-pointed by
// deleting and re-creating it, so the escalation check sees the new role.
func RoleBindingUpdate(old, new *v1.RoleBinding) Errs {
	var errs Errs
	roleRefUnchanged(&errs, old.GetRoleRef(), new.GetRoleRef())
	return errs
}

// ClusterRoleBindingUpdate checks what may not change in a cluster role
// binding: its roleRef.
func ClusterRoleBindingUpdate(old, new *v1.ClusterRoleBinding) Errs {
	var errs Errs
	roleRefUnchanged(&errs, old.GetRoleRef(), new.GetRoleRef())
	return errs
}

func roleRefUnchanged(errs *Errs, old, new *v1.RoleRef) {
	if old.GetKind() != new.GetKind() || old.GetName() != new.GetName() {
		errs.Add("roleRef", "cannot change roleRef")
	}
}
