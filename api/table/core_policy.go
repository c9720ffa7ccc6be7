package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// corePolicy is the tables of the core group's policy kinds.
var corePolicy = map[string]def{
	"ServiceAccount": kindDef(serviceAccountColumns, serviceAccountCells),
}

var serviceAccountColumns = []Column{
	nameColumn,
	{Name: "Secrets", Type: "integer", Description: "How many secrets the account lists (tokens are bound to pods, not stored: 0)."},
	ageColumn,
}

func serviceAccountCells(sa *v1.ServiceAccount, now time.Time) []any {
	return []any{sa.Metadata.GetName(), int64(0), Age(sa.Metadata.GetCreationTimestamp(), now)}
}
