package validation

import (
	"fmt"
	"strconv"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The scheduling fields of a pod spec: node affinity (required and
// preferred), pod affinity and anti-affinity, and topology spread
// constraints, with Kubernetes' rules and texts. What the scheduler does
// not implement (matchLabelKeys, mismatchLabelKeys) is refused naming the
// field.

// podScheduling validates spec.affinity and spec.topologySpreadConstraints.
func podScheduling(errs *Errs, path string, s *v1.PodSpec) {
	if a := s.Affinity; a != nil {
		ap := path + ".affinity"
		nodeAffinity(errs, ap+".nodeAffinity", a.NodeAffinity)
		if pa := a.PodAffinity; pa != nil {
			podAffinityTerms(errs, ap+".podAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if pa := a.PodAntiAffinity; pa != nil {
			podAffinityTerms(errs, ap+".podAntiAffinity", pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	topologySpreadConstraints(errs, path+".topologySpreadConstraints", s.TopologySpreadConstraints)
}

func nodeAffinity(errs *Errs, path string, na *v1.NodeAffinity) {
	if na == nil {
		return
	}
	if a := na.RequiredDuringSchedulingIgnoredDuringExecution; a != nil {
		ap := path + ".requiredDuringSchedulingIgnoredDuringExecution"
		if len(a.NodeSelectorTerms) == 0 {
			errs.Add(ap+".nodeSelectorTerms", "Required value: must have at least one node selector term")
		}
		for i, term := range a.NodeSelectorTerms {
			nodeSelectorTerm(errs, fmt.Sprintf("%s.nodeSelectorTerms[%d]", ap, i), term)
		}
	}
	for i, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		pp := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", path, i)
		weight(errs, pp+".weight", p.Weight)
		if p.Preference == nil {
			errs.Add(pp+".preference", "Required value")
			continue
		}
		nodeSelectorTerm(errs, pp+".preference", p.Preference)
	}
}

func weight(errs *Errs, path string, w int32) {
	if w < 1 || w > 100 {
		errs.Add(path, "Invalid value: %d: must be in the range 1-100", w)
	}
}

// nodeSelectorTerm checks one term, with Kubernetes' texts
// (labels.CompileNodeSelector compiles what passes).
func nodeSelectorTerm(errs *Errs, path string, term *v1.NodeSelectorTerm) {
	for j, f := range term.MatchFields {
		fp := fmt.Sprintf("%s.matchFields[%d]", path, j)
		if f.Key != "metadata.name" {
			errs.Add(fp+".key", "%q is not supported: only metadata.name", f.Key)
		}
		OneOf(errs, fp+".operator", f.Operator, "In", "NotIn")
		if len(f.Values) != 1 {
			errs.Add(fp+".values", "must have exactly one value (a node name)")
		}
	}
	for j, e := range term.MatchExpressions {
		ep := fmt.Sprintf("%s.matchExpressions[%d]", path, j)
		if e.Key == "" {
			errs.Add(ep+".key", "required")
		} else {
			QualifiedName(errs, ep+".key", e.Key)
		}
		switch e.Operator {
		case "In", "NotIn":
			if len(e.Values) == 0 {
				errs.Add(ep+".values", "Required value: must be specified when `operator` is 'In' or 'NotIn'")
			}
		case "Exists", "DoesNotExist":
			if len(e.Values) > 0 {
				errs.Add(ep+".values", "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
			}
		case "Gt", "Lt":
			if len(e.Values) != 1 {
				errs.Add(ep+".values", "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'")
			} else if _, err := strconv.ParseInt(e.Values[0], 10, 64); err != nil {
				errs.Add(ep+".values", "Invalid value: %q: must be an integer", e.Values[0])
			}
		default:
			OneOf(errs, ep+".operator", e.Operator, "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
		}
	}
}

func podAffinityTerms(errs *Errs, path string, required []*v1.PodAffinityTerm, preferred []*v1.WeightedPodAffinityTerm) {
	for i, t := range required {
		podAffinityTerm(errs, fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", path, i), t)
	}
	for i, w := range preferred {
		wp := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", path, i)
		weight(errs, wp+".weight", w.Weight)
		if w.PodAffinityTerm == nil {
			errs.Add(wp+".podAffinityTerm", "Required value")
			continue
		}
		podAffinityTerm(errs, wp+".podAffinityTerm", w.PodAffinityTerm)
	}
}

func podAffinityTerm(errs *Errs, path string, t *v1.PodAffinityTerm) {
	optionalSelector(errs, path+".labelSelector", t.LabelSelector)
	optionalSelector(errs, path+".namespaceSelector", t.NamespaceSelector)
	for i, ns := range t.Namespaces {
		if ns == "" || len(ns) > MaxLabelLength || !dns1123LabelRE.MatchString(ns) {
			errs.Add(fmt.Sprintf("%s.namespaces[%d]", path, i), "Invalid value: %s: a namespace name must be a DNS-1123 label", Short(ns))
		}
	}
	if len(t.MatchLabelKeys) > 0 {
		errs.Add(path+".matchLabelKeys", "not supported: the scheduler does not implement matchLabelKeys (put the labels in labelSelector)")
	}
	if len(t.MismatchLabelKeys) > 0 {
		errs.Add(path+".mismatchLabelKeys", "not supported: the scheduler does not implement mismatchLabelKeys (put the labels in labelSelector)")
	}
	topologyKey(errs, path+".topologyKey", t.TopologyKey)
}

func topologyKey(errs *Errs, path, key string) {
	if key == "" {
		errs.Add(path, "Required value: can not be empty")
		return
	}
	QualifiedName(errs, path, key)
}

// optionalSelector checks a selector that may be absent (a nil selector
// selects nothing; an empty one everything).
func optionalSelector(errs *Errs, path string, s *v1.LabelSelector) {
	if s == nil {
		return
	}
	Labels(errs, path+".matchLabels", s.MatchLabels)
	for i, e := range s.MatchExpressions {
		if e.Key != "" {
			QualifiedName(errs, fmt.Sprintf("%s.matchExpressions[%d].key", path, i), e.Key)
		}
	}
	if _, err := labels.FromLabelSelector(s); err != nil {
		errs.Add(path, "%v", err)
	}
}

func topologySpreadConstraints(errs *Errs, path string, cs []*v1.TopologySpreadConstraint) {
	seen := map[[2]string]bool{}
	for i, c := range cs {
		p := fmt.Sprintf("%s[%d]", path, i)
		if c.MaxSkew <= 0 {
			errs.Add(p+".maxSkew", "Invalid value: %d: must be greater than zero", c.MaxSkew)
		}
		topologyKey(errs, p+".topologyKey", c.TopologyKey)
		switch c.WhenUnsatisfiable {
		case "DoNotSchedule", "ScheduleAnyway":
		default:
			errs.Add(p+".whenUnsatisfiable", "Unsupported value: %q: supported values: \"DoNotSchedule\", \"ScheduleAnyway\"", c.WhenUnsatisfiable)
		}
		pair := [2]string{c.TopologyKey, c.WhenUnsatisfiable}
		if seen[pair] {
			errs.Add(p+".{topologyKey, whenUnsatisfiable}", "Duplicate value: \"{%s, %s}\"", c.TopologyKey, c.WhenUnsatisfiable)
		}
		seen[pair] = true
		if c.MinDomains != nil {
			if *c.MinDomains <= 0 {
				errs.Add(p+".minDomains", "Invalid value: %d: must be greater than zero", *c.MinDomains)
			} else if c.WhenUnsatisfiable != "DoNotSchedule" {
				errs.Add(p+".minDomains", "Invalid value: %d: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not %s", *c.MinDomains, c.WhenUnsatisfiable)
			}
		}
		for _, pol := range []struct {
			name string
			v    *string
		}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
			if pol.v != nil && *pol.v != "Honor" && *pol.v != "Ignore" {
				errs.Add(p+"."+pol.name, "Unsupported value: %q: supported values: \"Honor\", \"Ignore\"", *pol.v)
			}
		}
		if len(c.MatchLabelKeys) > 0 {
			errs.Add(p+".matchLabelKeys", "not supported: the scheduler does not implement matchLabelKeys (put the labels in labelSelector)")
		}
		optionalSelector(errs, p+".labelSelector", c.LabelSelector)
	}
}
