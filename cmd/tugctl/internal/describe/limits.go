package describe

import (
	"cmp"
	"context"
	"sort"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// describeLimitRange is kubectl's: one row per type and resource with its
// min, max, default request, default limit and ratio ("-" when unset).
func describeLimitRange(ctx context.Context, d *describer, lr *v1.LimitRange) error {
	d.kv(0, "Name", lr.GetMetadata().GetName())
	d.kv(0, "Namespace", lr.GetMetadata().GetNamespace())
	d.text(0, "Type\tResource\tMin\tMax\tDefault Request\tDefault Limit\tMax Limit/Request Ratio")
	d.text(0, "----\t--------\t---\t---\t---------------\t-------------\t-----------------------")
	for _, item := range lr.GetSpec().GetLimits() {
		names := map[string]bool{}
		for _, m := range []map[string]string{item.Max, item.Min, item.Default, item.DefaultRequest, item.MaxLimitRequestRatio} {
			for k := range m {
				names[k] = true
			}
		}
		sorted := make([]string, 0, len(names))
		for k := range names {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		dash := func(m map[string]string, k string) string { return cmp.Or(m[k], "-") }
		for _, k := range sorted {
			d.text(0, "%s\t%s\t%s\t%s\t%s\t%s\t%s", item.Type, k, dash(item.Min, k), dash(item.Max, k),
				dash(item.DefaultRequest, k), dash(item.Default, k), dash(item.MaxLimitRequestRatio, k))
		}
	}
	return d.events(ctx, lr)
}

// describeResourceQuota is kubectl's: the used and hard amount of each
// capped resource.
func describeResourceQuota(ctx context.Context, d *describer, rq *v1.ResourceQuota) error {
	d.kv(0, "Name", rq.GetMetadata().GetName())
	d.kv(0, "Namespace", rq.GetMetadata().GetNamespace())
	d.text(0, "Resource\tUsed\tHard")
	d.text(0, "--------\t----\t----")
	hard, used := rq.GetStatus().GetHard(), rq.GetStatus().GetUsed()
	names := make([]string, 0, len(hard))
	for n := range hard {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d.text(0, "%s\t%s\t%s", n, cmp.Or(used[n], "0"), hard[n])
	}
	return d.events(ctx, rq)
}
