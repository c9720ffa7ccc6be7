package auth

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// RBAC escalation prevention, as Kubernetes' (pkg/registry/rbac): a user
// may create or update a Role or ClusterRole only if it already holds every
// permission the role grants, or the "escalate" verb on roles
// (clusterroles); and may create or update a binding only if it holds every
// permission of the referenced role, or the "bind" verb on it. Members of
// system:masters pass both. Without these rules, the right to write RBAC
// objects would be the right to everything.

// RBACGroup is the API group of the RBAC kinds.
const RBACGroup = "rbac.authorization.k8s.io"

// RulesFor is every rule that applies to u in namespace ns: the rules of
// the ClusterRoles its ClusterRoleBindings name, and, when ns is set, of
// the Roles and ClusterRoles its RoleBindings in ns name. A binding whose
// role does not exist contributes nothing.
func (r *RBAC) RulesFor(u *User, ns string) []*v1.PolicyRule {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*v1.PolicyRule
	for _, b := range r.clusterBinds {
		if bound(u, b.Subjects, "") {
			if cr := r.clusterRoles[b.GetRoleRef().GetName()]; cr != nil {
				out = append(out, cr.Rules...)
			}
		}
	}
	if ns == "" {
		return out
	}
	for _, b := range r.bindings {
		if b.Metadata.Namespace == ns && bound(u, b.Subjects, ns) {
			rules, _ := r.roleRulesLocked(b.GetRoleRef().GetKind(), ns, b.GetRoleRef().GetName())
			out = append(out, rules...)
		}
	}
	return out
}

// RoleRules returns the rules of the role a binding in ns refers to (kind
// Role or ClusterRole) and whether that role exists.
func (r *RBAC) RoleRules(kind, ns, name string) ([]*v1.PolicyRule, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.roleRulesLocked(kind, ns, name)
}

func (r *RBAC) roleRulesLocked(kind, ns, name string) ([]*v1.PolicyRule, bool) {
	switch kind {
	case "ClusterRole":
		if cr := r.clusterRoles[name]; cr != nil {
			return cr.Rules, true
		}
	case "Role":
		if role := r.roles[ns+"/"+name]; role != nil {
			return role.Rules, true
		}
	}
	return nil, false
}

// Covers reports whether owner grants everything servant does; if not, it
// returns the servant's permissions owner lacks, one verb, group, resource
// (and name) each. A wildcard in servant is covered only by the same
// wildcard in owner.
func Covers(owner, servant []*v1.PolicyRule) (bool, []*v1.PolicyRule) {
	var missing []*v1.PolicyRule
	for _, sr := range servant {
		for _, atom := range breakdown(sr) {
			if !slices.ContainsFunc(owner, func(o *v1.PolicyRule) bool { return ruleCovers(o, atom) }) {
				missing = append(missing, atom)
			}
		}
	}
	return len(missing) == 0, missing
}

// breakdown splits a rule into one rule per group, resource, verb and name.
func breakdown(r *v1.PolicyRule) []*v1.PolicyRule {
	var out []*v1.PolicyRule
	for _, g := range r.ApiGroups {
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				if len(r.ResourceNames) == 0 {
					out = append(out, &v1.PolicyRule{ApiGroups: []string{g}, Resources: []string{res}, Verbs: []string{verb}})
					continue
				}
				for _, n := range r.ResourceNames {
					out = append(out, &v1.PolicyRule{ApiGroups: []string{g}, Resources: []string{res}, Verbs: []string{verb}, ResourceNames: []string{n}})
				}
			}
		}
	}
	return out
}

// ruleCovers reports whether owner grants the single permission atom.
func ruleCovers(owner, atom *v1.PolicyRule) bool {
	if !matchAny(owner.Verbs, atom.Verbs[0]) || !matchAny(owner.ApiGroups, atom.ApiGroups[0]) {
		return false
	}
	if !resourceCovers(owner.Resources, atom.Resources[0]) {
		return false
	}
	if len(owner.ResourceNames) == 0 {
		return true
	}
	return len(atom.ResourceNames) == 1 && slices.Contains(owner.ResourceNames, atom.ResourceNames[0])
}

// resourceCovers reports whether the resources of an owner rule include
// res: "*", res itself, or for a subresource "pods/log" also "*/log" and
// "pods/*" (the two subresource wildcards Authorize understands).
func resourceCovers(owner []string, res string) bool {
	if slices.Contains(owner, "*") || slices.Contains(owner, res) {
		return true
	}
	base, sub, ok := strings.Cut(res, "/")
	if !ok {
		return false
	}
	return (base != "*" && slices.Contains(owner, base+"/*")) || (sub != "*" && slices.Contains(owner, "*/"+sub))
}

// CompactString prints a rule as Kubernetes' RBAC errors do:
// {APIGroups:[""], Resources:["pods"], Verbs:["get"]}.
func CompactString(r *v1.PolicyRule) string {
	q := func(l []string) string {
		parts := make([]string, len(l))
		for i, s := range l {
			parts[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	fields := []string{"APIGroups:" + q(r.ApiGroups), "Resources:" + q(r.Resources)}
	if len(r.ResourceNames) > 0 {
		fields = append(fields, "ResourceNames:"+q(r.ResourceNames))
	}
	fields = append(fields, "Verbs:"+q(r.Verbs))
	return "{" + strings.Join(fields, ", ") + "}"
}

// EscalationMessage is Kubernetes' refusal text for missing permissions.
func EscalationMessage(u *User, missing []*v1.PolicyRule) string {
	lines := make([]string, 0, len(missing))
	seen := map[string]bool{}
	for _, m := range missing {
		s := CompactString(m)
		if !seen[s] {
			seen[s] = true
			lines = append(lines, s)
		}
	}
	sort.Strings(lines)
	groups := make([]string, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = fmt.Sprintf("%q", g)
	}
	return fmt.Sprintf("user %q (groups=[%s]) is attempting to grant RBAC permissions not currently held:\n%s",
		u.Name, strings.Join(groups, " "), strings.Join(lines, "\n"))
}

// Escalation is the outcome of an escalation check: nil when allowed.
type Escalation struct {
	// Missing are the permissions the user would grant without holding them
	// (none when the role itself was not found).
	Missing []*v1.PolicyRule
	// Msg explains the refusal in Kubernetes' words.
	Msg string
}

// CheckRoleGrant decides whether u may write a role (kind Role in ns, or
// ClusterRole when ns is "") with rules: it holds them all, or "escalate"
// on the role, or it is a member of system:masters.
func (r *RBAC) CheckRoleGrant(u *User, ns, resource, name string, rules []*v1.PolicyRule) *Escalation {
	if u.InGroup(GroupMasters) {
		return nil
	}
	if ok, _ := r.Authorize(Attributes{User: u, Verb: "escalate", APIGroup: RBACGroup, Resource: resource, Namespace: ns, Name: name}); ok {
		return nil
	}
	if ok, missing := Covers(r.RulesFor(u, ns), rules); !ok {
		return &Escalation{Missing: missing, Msg: EscalationMessage(u, missing)}
	}
	return nil
}

// RoleGetter reads the current rules of a role (kind Role in ns, or
// ClusterRole), and whether it exists: from storage, so a role created
// just before its binding is seen even before the watch brings it here.
type RoleGetter func(kind, ns, name string) ([]*v1.PolicyRule, bool, error)

// CheckBind decides whether u may bind the role roleKind/roleName in ns
// ("" for a ClusterRoleBinding): "bind" on that role, or holding all of
// its rules, or membership of system:masters. get reads the role (nil:
// from the RBAC held here).
func (r *RBAC) CheckBind(u *User, ns, roleKind, roleName string, get RoleGetter) *Escalation {
	if u.InGroup(GroupMasters) {
		return nil
	}
	resource := "clusterroles"
	if roleKind == "Role" {
		resource = "roles"
	}
	if ok, _ := r.Authorize(Attributes{User: u, Verb: "bind", APIGroup: RBACGroup, Resource: resource, Namespace: ns, Name: roleName}); ok {
		return nil
	}
	if get == nil {
		get = func(kind, ns, name string) ([]*v1.PolicyRule, bool, error) {
			rules, found := r.RoleRules(kind, ns, name)
			return rules, found, nil
		}
	}
	rules, found, err := get(roleKind, ns, roleName)
	if err != nil {
		return &Escalation{Msg: fmt.Sprintf("cannot read %s %q: %v", strings.ToLower(roleKind), roleName, err)}
	}
	if !found {
		where := ""
		if roleKind == "Role" {
			where = fmt.Sprintf(" in namespace %q", ns)
		}
		return &Escalation{Msg: fmt.Sprintf("%s %q not found%s: binding a role that does not exist needs the bind verb on it", strings.ToLower(roleKind), roleName, where)}
	}
	if ok, missing := Covers(r.RulesFor(u, ns), rules); !ok {
		return &Escalation{Missing: missing, Msg: EscalationMessage(u, missing)}
	}
	return nil
}
