// The autoscaling group (autoscaling/v2): HorizontalPodAutoscaler.

package validation

import (
	"fmt"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// HorizontalPodAutoscaler validates an autoscaler. Only Resource metrics
// (cpu and memory, from the kubelets' stats) are served; other metric
// types are refused rather than ignored.
func HorizontalPodAutoscaler(h *v1.HorizontalPodAutoscaler) Errs {
	var errs Errs
	ObjectMeta(&errs, h.Metadata, true, DNSSubdomain)
	s := h.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	ref := s.ScaleTargetRef
	if ref == nil {
		errs.Add("spec.scaleTargetRef", "required")
	} else {
		if ref.Kind == "" {
			errs.Add("spec.scaleTargetRef.kind", "required")
		}
		DNSSubdomain(&errs, "spec.scaleTargetRef.name", ref.Name)
	}
	if s.MinReplicas != nil && *s.MinReplicas < 1 {
		errs.Add("spec.minReplicas", "must be greater than or equal to 1")
	}
	if s.MaxReplicas < 1 {
		errs.Add("spec.maxReplicas", "must be greater than or equal to 1")
	} else if s.MinReplicas != nil && s.MaxReplicas < *s.MinReplicas {
		errs.Add("spec.maxReplicas", "must be greater than or equal to minReplicas")
	}
	for i, m := range s.Metrics {
		mp := fmt.Sprintf("spec.metrics[%d]", i)
		if m.Type != "Resource" {
			errs.Add(mp+".type", "%q is not supported: only Resource metrics (cpu, memory) are served", m.Type)
			continue
		}
		r := m.Resource
		if r == nil {
			errs.Add(mp+".resource", "required for type Resource")
			continue
		}
		OneOf(&errs, mp+".resource.name", r.Name, "cpu", "memory")
		t := r.Target
		if t == nil {
			errs.Add(mp+".resource.target", "required")
			continue
		}
		switch t.Type {
		case "Utilization":
			if t.AverageUtilization == nil || *t.AverageUtilization < 1 {
				errs.Add(mp+".resource.target.averageUtilization", "must be greater than 0")
			}
		case "AverageValue":
			if q, err := resource.Parse(t.AverageValue); err != nil || q.MilliValue() <= 0 {
				errs.Add(mp+".resource.target.averageValue", "must be a positive quantity")
			}
		default:
			errs.Add(mp+".resource.target.type", "%q: must be Utilization or AverageValue", t.Type)
		}
	}
	if b := s.Behavior; b != nil {
		for name, r := range map[string]*v1.HPAScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
			if r == nil {
				continue
			}
			rp := "spec.behavior." + name
			if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > 3600) {
				errs.Add(rp+".stabilizationWindowSeconds", "must be between 0 and 3600")
			}
			if r.SelectPolicy != "" {
				OneOf(&errs, rp+".selectPolicy", r.SelectPolicy, "Max", "Min", "Disabled")
			}
			for i, p := range r.Policies {
				pp := fmt.Sprintf("%s.policies[%d]", rp, i)
				OneOf(&errs, pp+".type", p.Type, "Pods", "Percent")
				if p.Value <= 0 {
					errs.Add(pp+".value", "must be greater than 0")
				}
				if p.PeriodSeconds <= 0 || p.PeriodSeconds > 1800 {
					errs.Add(pp+".periodSeconds", "must be between 1 and 1800")
				}
			}
		}
	}
	return errs
}
