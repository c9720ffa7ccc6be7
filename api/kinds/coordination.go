// The coordination.k8s.io group.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// coordinationKinds is the coordination.k8s.io/v1 group.
var coordinationKinds = []*Kind{
	{Name: "Lease", Plural: "leases", APIVersion: "coordination.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Lease{} }, Default: noDefault, Validate: typed(validation.Lease)},
}
