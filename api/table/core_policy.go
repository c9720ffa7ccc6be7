package table

import (
	"sort"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// corePolicy is the tables of the core group's policy kinds.
var corePolicy = map[string]def{
	"ServiceAccount": kindDef(serviceAccountColumns, serviceAccountCells),
	"LimitRange":     kindDef(limitRangeColumns, limitRangeCells),
	"ResourceQuota":  kindDef(resourceQuotaColumns, resourceQuotaCells),
}

var serviceAccountColumns = []Column{
	nameColumn,
	{Name: "Secrets", Type: "integer", Description: "How many secrets the account lists (tokens are bound to pods, not stored: 0)."},
	ageColumn,
}

func serviceAccountCells(sa *v1.ServiceAccount, now time.Time) []any {
	return []any{sa.Metadata.GetName(), int64(0), Age(sa.Metadata.GetCreationTimestamp(), now)}
}

// limitRangeColumns are kubectl's: NAME CREATED AT.
var limitRangeColumns = []Column{
	nameColumn,
	{Name: "Created At", Type: "string", Description: "When the limit range was created (UTC)."},
}

func limitRangeCells(lr *v1.LimitRange, _ time.Time) []any {
	created := "<unknown>"
	if ts := lr.Metadata.GetCreationTimestamp(); ts != nil {
		created = ts.AsTime().UTC().Format(time.RFC3339)
	}
	return []any{lr.Metadata.GetName(), created}
}

// resourceQuotaColumns are kubectl's: NAME AGE REQUEST LIMIT, the used/hard
// of each resource, limits.* under LIMIT and the others under REQUEST.
var resourceQuotaColumns = []Column{
	nameColumn,
	ageColumn,
	{Name: "Request", Type: "string", Description: "Used/hard of each capped resource but the limits.* ones."},
	{Name: "Limit", Type: "string", Description: "Used/hard of the limits.* resources."},
}

func resourceQuotaCells(rq *v1.ResourceQuota, now time.Time) []any {
	hard, used := rq.GetStatus().GetHard(), rq.GetStatus().GetUsed()
	names := make([]string, 0, len(hard))
	for n := range hard {
		names = append(names, n)
	}
	sort.Strings(names)
	var req, lim []string
	for _, n := range names {
		u := used[n]
		if u == "" {
			u = "0"
		}
		cell := n + ": " + u + "/" + hard[n]
		if strings.HasPrefix(n, "limits.") {
			lim = append(lim, cell)
		} else {
			req = append(req, cell)
		}
	}
	return []any{rq.Metadata.GetName(), Age(rq.Metadata.GetCreationTimestamp(), now), strings.Join(req, ", "), strings.Join(lim, ", ")}
}
