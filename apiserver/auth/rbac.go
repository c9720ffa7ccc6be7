package auth

import (
	"fmt"
	"slices"
	"sync"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Attributes describe one request for authorization.
type Attributes struct {
	User        *User
	Verb        string // get, list, watch, create, update, delete
	APIGroup    string // "" core, "apps", "rbac.authorization.k8s.io", ...
	Resource    string // plural: pods
	Subresource string // status, log, exec, binding, images, stats
	Namespace   string
	Name        string
}

func (a Attributes) resourceString() string {
	if a.Subresource != "" {
		return a.Resource + "/" + a.Subresource
	}
	return a.Resource
}

// Denied explains a refusal in Kubernetes' words, which kubectl prints
// after "Error from server (Forbidden): ": `deployments.apps "web" is
// forbidden: User "jane" cannot delete resource "deployments" in API group
// "apps" in the namespace "default"`, then ": reason" when there is one.
func (a Attributes) Denied(reason string) string {
	gr := a.Resource
	if a.APIGroup != "" {
		gr += "." + a.APIGroup
	}
	what := gr + " is forbidden"
	if a.Name != "" {
		what = fmt.Sprintf("%s %q is forbidden", gr, a.Name)
	}
	where := "at the cluster scope"
	if a.Namespace != "" {
		where = fmt.Sprintf("in the namespace %q", a.Namespace)
	}
	msg := fmt.Sprintf("%s: User %q cannot %s resource %q in API group %q %s", what, a.User.Name, a.Verb, a.resourceString(), a.APIGroup, where)
	if reason != "" {
		msg += ": " + reason
	}
	return msg
}

// RBAC evaluates Roles and bindings held in memory; the server keeps it in
// step with the API through the RBAC kinds' watch caches.
type RBAC struct {
	mu           sync.RWMutex
	roles        map[string]*v1.Role // ns/name
	clusterRoles map[string]*v1.ClusterRole
	bindings     map[string]*v1.RoleBinding // ns/name
	clusterBinds map[string]*v1.ClusterRoleBinding
}

// NewRBAC makes an empty policy store.
func NewRBAC() *RBAC {
	return &RBAC{roles: map[string]*v1.Role{}, clusterRoles: map[string]*v1.ClusterRole{},
		bindings: map[string]*v1.RoleBinding{}, clusterBinds: map[string]*v1.ClusterRoleBinding{}}
}

// Apply records an RBAC object (deleted=false) or forgets it.
func (r *RBAC) Apply(obj v1.Object, deleted bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := v1.Key(obj)
	switch o := obj.(type) {
	case *v1.Role:
		setOrDelete(r.roles, key, o, deleted)
	case *v1.ClusterRole:
		setOrDelete(r.clusterRoles, key, o, deleted)
	case *v1.RoleBinding:
		setOrDelete(r.bindings, key, o, deleted)
	case *v1.ClusterRoleBinding:
		setOrDelete(r.clusterBinds, key, o, deleted)
	}
}

// Replace makes the objects of one RBAC kind ("Role", "ClusterRole",
// "RoleBinding" or "ClusterRoleBinding") exactly objs, as a fresh list of
// that kind says: what is gone from it is forgotten.
func (r *RBAC) Replace(kind string, objs []v1.Object) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch kind {
	case "Role":
		r.roles = replaced[*v1.Role](objs)
	case "ClusterRole":
		r.clusterRoles = replaced[*v1.ClusterRole](objs)
	case "RoleBinding":
		r.bindings = replaced[*v1.RoleBinding](objs)
	case "ClusterRoleBinding":
		r.clusterBinds = replaced[*v1.ClusterRoleBinding](objs)
	}
}

func replaced[T v1.Object](objs []v1.Object) map[string]T {
	m := make(map[string]T, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			m[v1.Key(o)] = t
		}
	}
	return m
}

func setOrDelete[T any](m map[string]T, k string, v T, deleted bool) {
	if deleted {
		delete(m, k)
	} else {
		m[k] = v
	}
}

// Authorize reports whether a is allowed by some binding of a.User.
func (r *RBAC) Authorize(a Attributes) (bool, string) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, b := range r.clusterBinds {
		if bound(a.User, b.Subjects, "") {
			if cr := r.clusterRoles[b.GetRoleRef().GetName()]; cr != nil && allows(cr.Rules, a) {
				return true, "ClusterRoleBinding " + b.Metadata.Name
			}
		}
	}
	if a.Namespace == "" {
		return false, "no ClusterRoleBinding grants it"
	}
	for _, b := range r.bindings {
		if b.Metadata.Namespace != a.Namespace || !bound(a.User, b.Subjects, a.Namespace) {
			continue
		}
		var rules []*v1.PolicyRule
		switch b.GetRoleRef().GetKind() {
		case "ClusterRole":
			if cr := r.clusterRoles[b.RoleRef.Name]; cr != nil {
				rules = cr.Rules
			}
		case "Role":
			if role := r.roles[a.Namespace+"/"+b.RoleRef.Name]; role != nil {
				rules = role.Rules
			}
		}
		if allows(rules, a) {
			return true, "RoleBinding " + b.Metadata.Namespace + "/" + b.Metadata.Name
		}
	}
	return false, "no RoleBinding or ClusterRoleBinding grants it"
}

func bound(u *User, subjects []*v1.RBACSubject, ns string) bool {
	for _, s := range subjects {
		switch s.Kind {
		case "User":
			if s.Name == u.Name {
				return true
			}
		case "Group":
			if u.InGroup(s.Name) {
				return true
			}
		case "ServiceAccount":
			if u.Name == "system:serviceaccount:"+s.Namespace+":"+s.Name {
				return true
			}
		}
	}
	return false
}

func allows(rules []*v1.PolicyRule, a Attributes) bool {
	res := a.resourceString()
	for _, r := range rules {
		if !matchAny(r.Verbs, a.Verb) || !matchAny(r.ApiGroups, a.APIGroup) {
			continue
		}
		if !resourceCovers(r.Resources, res) {
			continue
		}
		if len(r.ResourceNames) > 0 && !slices.Contains(r.ResourceNames, a.Name) {
			continue
		}
		return true
	}
	return false
}

func matchAny(list []string, v string) bool {
	return slices.Contains(list, "*") || slices.Contains(list, v)
}
