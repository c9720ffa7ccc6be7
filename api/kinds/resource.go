// The resource group (resource.k8s.io/v1): DeviceClass, ResourceClaim,
// ResourceClaimTemplate.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var resourceKinds = []*Kind{
	{Name: "DeviceClass", Plural: "deviceclasses", APIVersion: "resource.k8s.io/v1",
		New: func() v1.Object { return &v1.DeviceClass{} }, Default: noDefault, Validate: typed(validation.DeviceClass)},
	{Name: "ResourceClaim", Plural: "resourceclaims", APIVersion: "resource.k8s.io/v1", Namespaced: true,
		New: func() v1.Object { return &v1.ResourceClaim{} }, Default: typedDefault(defaultResourceClaim),
		Validate: typed(validation.ResourceClaim), ValidateUpdate: typedUpdate(validation.ResourceClaimUpdate)},
	{Name: "ResourceClaimTemplate", Plural: "resourceclaimtemplates", APIVersion: "resource.k8s.io/v1", Namespaced: true,
		New:      func() v1.Object { return &v1.ResourceClaimTemplate{} },
		Default:  typedDefault(func(t *v1.ResourceClaimTemplate) { DefaultResourceClaimSpec(t.GetSpec().GetSpec()) }),
		Validate: typed(validation.ResourceClaimTemplate), ValidateUpdate: typedUpdate(validation.ResourceClaimTemplateUpdate)},
}

func defaultResourceClaim(c *v1.ResourceClaim) { DefaultResourceClaimSpec(c.GetSpec()) }

// DefaultResourceClaimSpec is Kubernetes' defaulting of a claim's
// requests: allocationMode ExactCount, then count 1; tolerations'
// operator Equal.
func DefaultResourceClaimSpec(s *v1.ResourceClaimSpec) {
	tolerations := func(ts []*v1.DeviceToleration) {
		for _, t := range ts {
			if t.Operator == "" {
				t.Operator = "Equal"
			}
		}
	}
	for _, r := range s.GetDevices().GetRequests() {
		if e := r.GetExactly(); e != nil {
			e.AllocationMode, e.Count = defaultAllocation(e.AllocationMode, e.Count)
			tolerations(e.Tolerations)
		}
		for _, sub := range r.GetFirstAvailable() {
			sub.AllocationMode, sub.Count = defaultAllocation(sub.AllocationMode, sub.Count)
			tolerations(sub.Tolerations)
		}
	}
}

func defaultAllocation(mode string, count int64) (string, int64) {
	if mode == "" {
		mode = "ExactCount"
	}
	if mode == "ExactCount" && count == 0 {
		count = 1
	}
	return mode, count
}
