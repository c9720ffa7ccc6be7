// The policy group (policy/v1): its kinds and their defaults.

package kinds

import (
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// policyKinds is the policy group, policy/v1.
var policyKinds = []*Kind{
	{Name: "PodDisruptionBudget", Plural: "poddisruptionbudgets", Short: []string{"pdb"}, APIVersion: "policy/v1", Namespaced: true,
		New: func() v1.Object { return &v1.PodDisruptionBudget{} }, Default: typedDefault(defaultPDB), Validate: typed(validation.PodDisruptionBudget)},
}

func defaultPDB(p *v1.PodDisruptionBudget) {
	if p.Spec != nil && p.Spec.UnhealthyPodEvictionPolicy == "" {
		p.Spec.UnhealthyPodEvictionPolicy = "IfHealthyBudget"
	}
}
