// The rbac.authorization.k8s.io group.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// rbacKinds is the rbac.authorization.k8s.io/v1 group.
var rbacKinds = []*Kind{
	{Name: "Role", Plural: "roles", APIVersion: "rbac.authorization.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Role{} }, Default: noDefault, Validate: typed(validation.Role)},
	{Name: "ClusterRole", Plural: "clusterroles", APIVersion: "rbac.authorization.k8s.io/v1",
		New: func() v1.Object { return &v1.ClusterRole{} }, Default: noDefault, Validate: typed(validation.ClusterRole)},
	{Name: "RoleBinding", Plural: "rolebindings", APIVersion: "rbac.authorization.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.RoleBinding{} }, Default: noDefault, Validate: typed(validation.RoleBinding),
		ValidateUpdate: typedUpdate(validation.RoleBindingUpdate)},
	{Name: "ClusterRoleBinding", Plural: "clusterrolebindings", APIVersion: "rbac.authorization.k8s.io/v1",
		New: func() v1.Object { return &v1.ClusterRoleBinding{} }, Default: noDefault, Validate: typed(validation.ClusterRoleBinding),
		ValidateUpdate: typedUpdate(validation.ClusterRoleBindingUpdate)},
}

// NonKindResources are what RBAC rules name besides the kinds, with their
// API group: users and groups (impersonate: a user token for them),
// certificates (revoke, list), componentstatuses (get, list: the
// computed cluster status). Access reviews (tugctl auth can-i) accept
// them as resources.
var NonKindResources = map[string]string{
	"users":             "",
	"groups":            "",
	"certificates":      "certificates.k8s.io",
	"componentstatuses": "",
}
