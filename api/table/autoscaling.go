package table

import (
	"fmt"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// autoscaling is the tables of the autoscaling group (autoscaling/v2).
var autoscaling = map[string]def{
	"HorizontalPodAutoscaler": kindDef(hpaColumns, hpaCells),
}

var hpaColumns = []Column{
	nameColumn,
	{Name: "Reference", Type: "string", Description: "The scaled object (kind/name)."},
	{Name: "Targets", Type: "string", Description: "Current and target value of each metric."},
	{Name: "MinPods", Type: "integer", Description: "The fewest replicas it scales to."},
	{Name: "MaxPods", Type: "integer", Description: "The most replicas it scales to."},
	{Name: "Replicas", Type: "integer", Description: "The target's replicas the autoscaler last saw."},
	ageColumn,
}

func hpaCells(h *v1.HorizontalPodAutoscaler, now time.Time) []any {
	sp := h.GetSpec()
	return []any{h.Metadata.GetName(), sp.GetScaleTargetRef().GetKind() + "/" + sp.GetScaleTargetRef().GetName(),
		HPATargets(h), int64(sp.GetMinReplicas()), int64(sp.GetMaxReplicas()), int64(h.GetStatus().GetCurrentReplicas()),
		Age(h.Metadata.GetCreationTimestamp(), now)}
}

// HPATargets is kubectl's TARGETS: "cpu: 45%/80%", "<unknown>" for a
// metric not measured yet.
func HPATargets(h *v1.HorizontalPodAutoscaler) string {
	var parts []string
	for _, m := range h.GetSpec().GetMetrics() {
		r := m.GetResource()
		cur := "<unknown>"
		for _, s := range h.GetStatus().GetCurrentMetrics() {
			if s.GetResource().GetName() != r.GetName() {
				continue
			}
			if c := s.GetResource().GetCurrent(); r.GetTarget().GetType() == "Utilization" && c.AverageUtilization != nil {
				cur = fmt.Sprintf("%d%%", c.GetAverageUtilization())
			} else if c.GetAverageValue() != "" {
				cur = c.GetAverageValue()
			}
		}
		want := r.GetTarget().GetAverageValue()
		if r.GetTarget().GetType() == "Utilization" {
			want = fmt.Sprintf("%d%%", r.GetTarget().GetAverageUtilization())
		}
		parts = append(parts, fmt.Sprintf("%s: %s/%s", r.GetName(), cur, want))
	}
	return OrNone(strings.Join(parts, ", "))
}
