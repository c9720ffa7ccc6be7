package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// networking is the tables of the networking.k8s.io group.
var networking = map[string]def{
	"NetworkPolicy": kindDef(networkPolicyColumns, networkPolicyCells),
	"IngressClass":  kindDef(ingressClassColumns, ingressClassCells),
}

var ingressClassColumns = []Column{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "The controller serving the class (spec.controller)."},
	{Name: "Parameters", Type: "string", Description: "The controller's configuration (spec.parameters: Kind.group/name)."},
	ageColumn,
}

// ingressClassCells is kubectl's printIngressClass; the default class is
// marked "(default)", as StorageClasses are.
func ingressClassCells(c *v1.IngressClass, now time.Time) []any {
	name := c.Metadata.GetName()
	if c.Metadata.GetAnnotations()["ingressclass.kubernetes.io/is-default-class"] == "true" {
		name += " (default)"
	}
	params := "<none>"
	if p := c.GetSpec().GetParameters(); p != nil {
		params = p.GetKind()
		if p.ApiGroup != nil {
			params += "." + p.GetApiGroup()
		}
		params += "/" + p.GetName()
	}
	return []any{name, c.GetSpec().GetController(), params, Age(c.Metadata.GetCreationTimestamp(), now)}
}

var networkPolicyColumns = []Column{
	nameColumn,
	{Name: "Pod-Selector", Type: "string", Description: "The pods the policy applies to (spec.podSelector); <none>: all pods of the namespace."},
	ageColumn,
}

func networkPolicyCells(p *v1.NetworkPolicy, now time.Time) []any {
	return []any{p.Metadata.GetName(), SelectorString(p.GetSpec().GetPodSelector()), Age(p.Metadata.GetCreationTimestamp(), now)}
}
