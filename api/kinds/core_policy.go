// The core group's policy kinds (v1, api/v1/core_policy.proto):
// ServiceAccount.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var corePolicyKinds = []*Kind{
	{Name: "ServiceAccount", Plural: "serviceaccounts", Short: []string{"sa"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.ServiceAccount{} }, Default: noDefault, Validate: typed(validation.ServiceAccount)},
}
