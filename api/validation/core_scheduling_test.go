package validation_test

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func withAffinity(a *v1.Affinity) func() v1.Object {
	return func() v1.Object { p := pod(); p.Spec.Affinity = a; return p }
}

func preferredNode(w int32, reqs ...*v1.LabelSelectorRequirement) *v1.Affinity {
	return &v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*v1.PreferredSchedulingTerm{
		{Weight: w, Preference: &v1.NodeSelectorTerm{MatchExpressions: reqs}},
	}}}
}

func req(key, op string, values ...string) *v1.LabelSelectorRequirement {
	return &v1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestNodeAffinityValidation(t *testing.T) {
	const pref = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
	const required = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
	runValidation(t, []validationCase{
		{"preferred", withAffinity(preferredNode(1, req("topology.kubernetes.io/zone", "In", "a", "b"))), nil},
		{"preferred weight 100 with Gt", withAffinity(preferredNode(100, req("cores", "Gt", "4"))), nil},
		{"empty preference is a no-op", withAffinity(preferredNode(5)), nil},
		{"weight 0", withAffinity(preferredNode(0, req("zone", "Exists"))), []string{pref + ".weight: Invalid value: 0: must be in the range 1-100"}},
		{"weight 101", withAffinity(preferredNode(101, req("zone", "Exists"))), []string{pref + ".weight: Invalid value: 101: must be in the range 1-100"}},
		{"no preference", withAffinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*v1.PreferredSchedulingTerm{{Weight: 1}}}}),
			[]string{pref + ".preference: Required value"}},
		{"bad operator", withAffinity(preferredNode(1, req("zone", "Equals", "a"))), []string{pref + ".preference.matchExpressions[0].operator", `"Equals" is not one of`}},
		{"In without values", withAffinity(preferredNode(1, req("zone", "In"))), []string{pref + ".preference.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"}},
		{"Gt not a number", withAffinity(preferredNode(1, req("cores", "Gt", "many"))), []string{pref + `.preference.matchExpressions[0].values: Invalid value: "many": must be an integer`}},
		{"Exists with values", withAffinity(preferredNode(1, req("zone", "Exists", "a"))), []string{pref + ".preference.matchExpressions[0].values: Forbidden: may not be specified"}},
		{"Lt with two values", withAffinity(preferredNode(1, req("cores", "Lt", "1", "2"))), []string{pref + ".preference.matchExpressions[0].values: Required value: must be specified single value"}},
		{"bad key", withAffinity(preferredNode(1, req("-zone", "Exists"))), []string{pref + ".preference.matchExpressions[0].key"}},
		{"required without terms", withAffinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{}}}),
			[]string{required + ".nodeSelectorTerms: Required value: must have at least one node selector term"}},
		{"required matchFields other than metadata.name", withAffinity(&v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []*v1.NodeSelectorTerm{{MatchFields: []*v1.LabelSelectorRequirement{req("spec.unschedulable", "In", "true")}}}}}}),
			[]string{required + `.nodeSelectorTerms[0].matchFields[0].key: "spec.unschedulable" is not supported`}},
	})
}
