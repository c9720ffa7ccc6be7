package validation_test

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func pdb() *v1.PodDisruptionBudget {
	return &v1.PodDisruptionBudget{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.PodDisruptionBudgetSpec{MinAvailable: "2", Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
}

func TestPolicyValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return pdb() }, nil},
		{"percentage", func() v1.Object { p := pdb(); p.Spec.MinAvailable = "50%"; return p }, nil},
		{"max unavailable", func() v1.Object { p := pdb(); p.Spec.MinAvailable, p.Spec.MaxUnavailable = "", "1"; return p }, nil},
		{"empty selector selects all", func() v1.Object { p := pdb(); p.Spec.Selector = &v1.LabelSelector{}; return p }, nil},
		{"both", func() v1.Object { p := pdb(); p.Spec.MaxUnavailable = "1"; return p }, []string{"minAvailable and maxUnavailable cannot be both set"}},
		{"neither", func() v1.Object { p := pdb(); p.Spec.MinAvailable = ""; return p }, []string{"one of minAvailable and maxUnavailable is required"}},
		{"negative", func() v1.Object { p := pdb(); p.Spec.MinAvailable = "-1"; return p }, []string{"spec.minAvailable"}},
		{"over 100%", func() v1.Object { p := pdb(); p.Spec.MinAvailable = "120%"; return p }, []string{"spec.minAvailable", "100%"}},
		{"bad policy", func() v1.Object { p := pdb(); p.Spec.UnhealthyPodEvictionPolicy = "Never"; return p }, []string{"spec.unhealthyPodEvictionPolicy"}},
		{"bad selector", func() v1.Object {
			p := pdb()
			p.Spec.Selector.MatchExpressions = []*v1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}
			return p
		}, []string{"spec.selector"}},
	})
}
