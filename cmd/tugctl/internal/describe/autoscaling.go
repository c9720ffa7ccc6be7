package describe

import (
	"context"
	"fmt"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func describeHPA(ctx context.Context, d *describer, h *v1.HorizontalPodAutoscaler) error {
	sp, st := h.GetSpec(), h.GetStatus()
	d.meta(h.GetMetadata(), true)
	ref := sp.GetScaleTargetRef()
	d.kv(0, "Reference", ref.GetKind()+"/"+ref.GetName())
	d.kv(0, "Metrics", "( current / target )")
	d.kv(1, "targets", table.HPATargets(h))
	d.kv(0, "Min replicas", sp.GetMinReplicas())
	d.kv(0, "Max replicas", sp.GetMaxReplicas())
	if b := sp.GetBehavior(); b != nil {
		d.text(0, "Behavior:")
		for _, r := range []struct {
			name  string
			rules *v1.HPAScalingRules
		}{{"Scale Up", b.GetScaleUp()}, {"Scale Down", b.GetScaleDown()}} {
			d.text(1, "%s:", r.name)
			d.kv(2, "Stabilization Window", fmt.Sprintf("%d seconds", r.rules.GetStabilizationWindowSeconds()))
			d.kv(2, "Select Policy", r.rules.GetSelectPolicy())
			for _, p := range r.rules.GetPolicies() {
				d.text(2, "Policy: %s %d per %d seconds", p.Type, p.Value, p.PeriodSeconds)
			}
		}
	}
	d.kv(0, ref.GetKind()+" pods", fmt.Sprintf("%d current / %d desired", st.GetCurrentReplicas(), st.GetDesiredReplicas()))
	if st.GetLastScaleTime() != nil {
		d.kv(0, "Last scale time", timeString(st.GetLastScaleTime()))
	}
	if len(st.GetConditions()) > 0 {
		d.text(0, "Conditions:")
		d.text(1, "Type\tStatus\tReason\tMessage")
		d.text(1, "----\t------\t------\t-------")
		for _, c := range st.GetConditions() {
			d.text(1, "%s\t%s\t%s\t%s", c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return d.events(ctx, h)
}
