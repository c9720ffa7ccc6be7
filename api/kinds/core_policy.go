// The core group's policy kinds (v1, api/v1/core_policy.proto):
// ServiceAccount, LimitRange.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var corePolicyKinds = []*Kind{
	{Name: "ServiceAccount", Plural: "serviceaccounts", Short: []string{"sa"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.ServiceAccount{} }, Default: noDefault, Validate: typed(validation.ServiceAccount)},
	{Name: "LimitRange", Plural: "limitranges", Short: []string{"limits"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.LimitRange{} }, Default: typedDefault(defaultLimitRange), Validate: typed(validation.LimitRange)},
}

// defaultLimitRange is Kubernetes' defaulting of a Container item: an unset
// default limit is the max, an unset default request the default limit,
// else the min.
func defaultLimitRange(lr *v1.LimitRange) {
	for _, item := range lr.GetSpec().GetLimits() {
		if item.Type != validation.LimitTypeContainer {
			continue
		}
		fill := func(dst *map[string]string, src map[string]string) {
			for k, v := range src {
				if _, ok := (*dst)[k]; ok {
					continue
				}
				if *dst == nil {
					*dst = map[string]string{}
				}
				(*dst)[k] = v
			}
		}
		fill(&item.Default, item.Max)
		fill(&item.DefaultRequest, item.Default)
		fill(&item.DefaultRequest, item.Min)
	}
}
