package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// coordination is the tables of the coordination.k8s.io group.
var coordination = map[string]def{
	"Lease": kindDef(leaseColumns, leaseCells),
}

var leaseColumns = []Column{
	nameColumn,
	{Name: "Holder", Type: "string", Description: "Who holds the lease (spec.holderIdentity)."},
	ageColumn,
}

func leaseCells(l *v1.Lease, now time.Time) []any {
	return []any{l.Metadata.GetName(), OrNone(l.GetSpec().GetHolderIdentity()), Age(l.Metadata.GetCreationTimestamp(), now)}
}
