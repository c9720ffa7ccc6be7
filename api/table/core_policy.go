package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// corePolicy is the tables of the core group's policy kinds.
var corePolicy = map[string]def{
	"ServiceAccount": kindDef(serviceAccountColumns, serviceAccountCells),
	"LimitRange":     kindDef(limitRangeColumns, limitRangeCells),
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
