package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// policy is the tables of the policy group (policy/v1).
var policy = map[string]def{
	"PodDisruptionBudget": kindDef(pdbColumns, pdbCells),
}

var pdbColumns = []Column{
	nameColumn,
	{Name: "Min Available", Type: "string", Description: "Pods that must stay healthy (spec.minAvailable), or N/A."},
	{Name: "Max Unavailable", Type: "string", Description: "Pods that may be unhealthy at once (spec.maxUnavailable), or N/A."},
	{Name: "Allowed Disruptions", Type: "integer", Description: "Evictions allowed now (status.disruptionsAllowed)."},
	ageColumn,
}

func pdbCells(p *v1.PodDisruptionBudget, now time.Time) []any {
	na := func(s string) string {
		if s == "" {
			return "N/A"
		}
		return s
	}
	return []any{p.Metadata.GetName(), na(p.GetSpec().GetMinAvailable()), na(p.GetSpec().GetMaxUnavailable()),
		int64(p.GetStatus().GetDisruptionsAllowed()), Age(p.Metadata.GetCreationTimestamp(), now)}
}
