package table

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// networking is the tables of the networking.k8s.io group.
var networking = map[string]def{
	"NetworkPolicy": kindDef(networkPolicyColumns, networkPolicyCells),
	"IngressClass":  kindDef(ingressClassColumns, ingressClassCells),
	"Ingress":       kindDef(ingressColumns, ingressCells),
}

var ingressColumns = []Column{
	nameColumn,
	{Name: "Class", Type: "string", Description: "The IngressClass serving it (spec.ingressClassName)."},
	{Name: "Hosts", Type: "string", Description: "The hosts of its rules (* : every host)."},
	{Name: "Address", Type: "string", Description: "Where it is served (status.loadBalancer)."},
	{Name: "Ports", Type: "string", Description: "80, and 443 with TLS."},
	ageColumn,
}

// ingressCells is kubectl's printIngress.
func ingressCells(ing *v1.Ingress, now time.Time) []any {
	class := "<none>"
	if ing.GetSpec().GetIngressClassName() != "" || (ing.GetSpec() != nil && ing.Spec.IngressClassName != nil) {
		class = ing.GetSpec().GetIngressClassName()
	}
	ports := "80"
	if len(ing.GetSpec().GetTls()) > 0 {
		ports = "80, 443"
	}
	return []any{ing.Metadata.GetName(), class, IngressHosts(ing.GetSpec().GetRules()), IngressAddress(ing.GetStatus().GetLoadBalancer(), false),
		ports, Age(ing.Metadata.GetCreationTimestamp(), now)}
}

// IngressHosts is kubectl's formatHosts: up to three hosts, then "+ N
// more..."; "*" when no rule names one.
func IngressHosts(rules []*v1.IngressRule) string {
	const max = 3
	var list []string
	more := false
	for _, r := range rules {
		if len(list) == max {
			more = true
		}
		if !more && r.GetHost() != "" {
			list = append(list, r.GetHost())
		}
	}
	if len(list) == 0 {
		return "*"
	}
	out := strings.Join(list, ",")
	if more {
		out = fmt.Sprintf("%s + %d more...", out, len(rules)-max)
	}
	return out
}

// IngressAddress is kubectl's ingressLoadBalancerStatusStringer: the
// sorted addresses (IP, else hostname), cut at 16 characters unless wide.
func IngressAddress(s *v1.IngressLoadBalancerStatus, wide bool) string {
	set := map[string]bool{}
	for _, in := range s.GetIngress() {
		if in.GetIp() != "" {
			set[in.GetIp()] = true
		} else if in.GetHostname() != "" {
			set[in.GetHostname()] = true
		}
	}
	list := make([]string, 0, len(set))
	for a := range set {
		list = append(list, a)
	}
	sort.Strings(list)
	r := strings.Join(list, ",")
	if !wide && len(r) > 16 {
		r = r[:13] + "..."
	}
	return r
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
