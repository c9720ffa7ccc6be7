// The scheduling group (scheduling.k8s.io/v1): PriorityClass.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var schedulingKinds = []*Kind{
	{Name: "PriorityClass", Plural: "priorityclasses", Short: []string{"pc"}, APIVersion: "scheduling.k8s.io/v1",
		New: func() v1.Object { return &v1.PriorityClass{} }, Default: noDefault, Validate: typed(validation.PriorityClass),
		ValidateUpdate: typedUpdate(validation.PriorityClassUpdate)},
}
