// The resource group (resource.k8s.io/v1): DeviceClass.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var resourceKinds = []*Kind{
	{Name: "DeviceClass", Plural: "deviceclasses", APIVersion: "resource.k8s.io/v1",
		New: func() v1.Object { return &v1.DeviceClass{} }, Default: noDefault, Validate: typed(validation.DeviceClass)},
}
