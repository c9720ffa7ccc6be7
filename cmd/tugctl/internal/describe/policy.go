package describe

import (
	"context"
	"sort"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func describePDB(ctx context.Context, d *describer, p *v1.PodDisruptionBudget) error {
	sp, st := p.GetSpec(), p.GetStatus()
	d.meta(p.GetMetadata(), true)
	if sp.GetMinAvailable() != "" {
		d.kv(0, "Min available", sp.GetMinAvailable())
	} else {
		d.kv(0, "Max unavailable", sp.GetMaxUnavailable())
	}
	d.kv(0, "Selector", table.SelectorString(sp.GetSelector()))
	d.kv(0, "Unhealthy Pod Eviction Policy", sp.GetUnhealthyPodEvictionPolicy())
	d.text(0, "Status:")
	d.kv(1, "Allowed disruptions", st.GetDisruptionsAllowed())
	d.kv(1, "Current", st.GetCurrentHealthy())
	d.kv(1, "Desired", st.GetDesiredHealthy())
	d.kv(1, "Total", st.GetExpectedPods())
	if len(st.GetDisruptedPods()) > 0 {
		var names []string
		for n := range st.GetDisruptedPods() {
			names = append(names, n)
		}
		sort.Strings(names)
		for i, n := range names {
			key := "Disrupted pods"
			if i > 0 {
				key = ""
			}
			d.kv(1, key, n+" (evicted "+timeString(st.GetDisruptedPods()[n])+")")
		}
	}
	d.conditions(st.GetConditions(), true)
	return d.events(ctx, p)
}
