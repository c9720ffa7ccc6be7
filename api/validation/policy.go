// The policy group (policy/v1): PodDisruptionBudget.

package validation

import v1 "github.com/tugboat/tugboat/api/v1"

// PodDisruptionBudget validates a disruption budget.
func PodDisruptionBudget(p *v1.PodDisruptionBudget) Errs {
	var errs Errs
	ObjectMeta(&errs, p.Metadata, true, DNSSubdomain)
	s := p.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	switch {
	case s.MinAvailable != "" && s.MaxUnavailable != "":
		errs.Add("spec", "minAvailable and maxUnavailable cannot be both set")
	case s.MinAvailable == "" && s.MaxUnavailable == "":
		errs.Add("spec", "one of minAvailable and maxUnavailable is required")
	case s.MinAvailable != "":
		IntOrPercent(&errs, "spec.minAvailable", s.MinAvailable, true)
	default:
		IntOrPercent(&errs, "spec.maxUnavailable", s.MaxUnavailable, true)
	}
	// policy/v1: an empty selector selects every pod of the namespace, an
	// unset one none.
	if sel := s.Selector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		LabelSelector(&errs, "spec.selector", sel)
	}
	OneOf(&errs, "spec.unhealthyPodEvictionPolicy", s.UnhealthyPodEvictionPolicy, "IfHealthyBudget", "AlwaysAllow")
	return errs
}
