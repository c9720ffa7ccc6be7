package table

import (
	"strconv"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// scheduling is the tables of the scheduling.k8s.io group.
var scheduling = map[string]def{
	"PriorityClass": kindDef(priorityClassColumns, priorityClassCells),
}

var priorityClassColumns = []Column{
	nameColumn,
	{Name: "Value", Type: "integer", Description: "The priority pods of this class get."},
	{Name: "Global-Default", Type: "string", Description: "Whether pods that name no class get it."},
	ageColumn,
	{Name: "PreemptionPolicy", Type: "string", Description: "Whether its pods may preempt lower-priority pods."},
}

func priorityClassCells(pc *v1.PriorityClass, now time.Time) []any {
	policy := pc.GetPreemptionPolicy()
	if policy == "" {
		policy = "<none>"
	}
	return []any{pc.Metadata.GetName(), int64(pc.Value), strconv.FormatBool(pc.GlobalDefault), Age(pc.Metadata.GetCreationTimestamp(), now), policy}
}
