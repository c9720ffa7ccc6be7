// The discovery group (discovery.k8s.io/v1): its kinds and their defaults.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var discoveryKinds = []*Kind{
	{Name: "EndpointSlice", Plural: "endpointslices", APIVersion: "discovery.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.EndpointSlice{} }, Default: typedDefault(defaultEndpointSlice), Validate: typed(validation.EndpointSlice),
		ValidateUpdate: typedUpdate(validation.EndpointSliceUpdate)},
}

// defaultEndpointSlice: ports' protocol TCP, as Kubernetes.
func defaultEndpointSlice(s *v1.EndpointSlice) {
	for _, p := range s.Ports {
		if p.Protocol == nil {
			tcp := "TCP"
			p.Protocol = &tcp
		}
	}
}
