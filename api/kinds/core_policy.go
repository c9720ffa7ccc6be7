// The core group's policy kinds (v1, api/v1/core_policy.proto):
// ServiceAccount, LimitRange, ResourceQuota.

package kinds

import (
	"github.com/tugboat/tugboat/api/quota"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

var corePolicyKinds = []*Kind{
	{Name: "ServiceAccount", Plural: "serviceaccounts", Short: []string{"sa"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.ServiceAccount{} }, Default: noDefault, Validate: typed(validation.ServiceAccount)},
	{Name: "LimitRange", Plural: "limitranges", Short: []string{"limits"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.LimitRange{} }, Default: typedDefault(defaultLimitRange), Validate: typed(validation.LimitRange)},
	{Name: "ResourceQuota", Plural: "resourcequotas", Short: []string{"quota"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.ResourceQuota{} }, Default: noDefault, Validate: typed(validation.ResourceQuota)},
}

// QuotaKind is the kind whose objects a quota's resource name measures or
// counts (Pod for requests.cpu, Deployment for count/deployments.apps),
// nil for none.
func QuotaKind(name string) *Kind {
	kind, gr := quota.KindOf(name)
	if kind != "" {
		k, _ := Lookup(kind)
		return k
	}
	for _, k := range table {
		if gr != "" && k.Namespaced && k.GroupResource() == gr {
			return k
		}
	}
	return nil
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
