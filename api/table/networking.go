package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// networking is the tables of the networking.k8s.io group.
var networking = map[string]def{
	"NetworkPolicy": kindDef(networkPolicyColumns, networkPolicyCells),
}

var networkPolicyColumns = []Column{
	nameColumn,
	{Name: "Pod-Selector", Type: "string", Description: "The pods the policy applies to (spec.podSelector); <none>: all pods of the namespace."},
	ageColumn,
}

func networkPolicyCells(p *v1.NetworkPolicy, now time.Time) []any {
	return []any{p.Metadata.GetName(), SelectorString(p.GetSpec().GetPodSelector()), Age(p.Metadata.GetCreationTimestamp(), now)}
}
