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

func podTerm(key string) *v1.PodAffinityTerm {
	return &v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
}

func TestPodAffinityValidation(t *testing.T) {
	anti := func(terms ...*v1.PodAffinityTerm) *v1.Affinity {
		return &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
	}
	prefer := func(w int32, t *v1.PodAffinityTerm) *v1.Affinity {
		return &v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*v1.WeightedPodAffinityTerm{{Weight: w, PodAffinityTerm: t}}}}
	}
	const req0 = "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
	const pref0 = "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
	withNS := podTerm("kubernetes.io/hostname")
	withNS.Namespaces = []string{"default", "prod"}
	withNS.NamespaceSelector = &v1.LabelSelector{}
	badNS := podTerm("zone")
	badNS.Namespaces = []string{"Prod"}
	matchKeys := podTerm("zone")
	matchKeys.MatchLabelKeys = []string{"pod-template-hash"}
	mismatchKeys := podTerm("zone")
	mismatchKeys.MismatchLabelKeys = []string{"tenant"}
	badSelector := podTerm("zone")
	badSelector.LabelSelector.MatchExpressions = []*v1.LabelSelectorRequirement{{Key: "app", Operator: "In"}}
	runValidation(t, []validationCase{
		{"required anti-affinity", withAffinity(anti(podTerm("kubernetes.io/hostname"))), nil},
		{"namespaces and an empty namespaceSelector", withAffinity(anti(withNS)), nil},
		{"preferred affinity", withAffinity(prefer(100, podTerm("topology.kubernetes.io/zone"))), nil},
		{"no labelSelector selects nothing, allowed", withAffinity(anti(&v1.PodAffinityTerm{TopologyKey: "zone"})), nil},
		{"topologyKey empty", withAffinity(anti(podTerm(""))), []string{req0 + ".topologyKey: Required value: can not be empty"}},
		{"topologyKey invalid", withAffinity(anti(podTerm("a b"))), []string{req0 + `.topologyKey: "a b"`}},
		{"weight 0", withAffinity(prefer(0, podTerm("zone"))), []string{pref0 + ".weight: Invalid value: 0: must be in the range 1-100"}},
		{"no podAffinityTerm", withAffinity(&v1.Affinity{PodAffinity: &v1.PodAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*v1.WeightedPodAffinityTerm{{Weight: 1}}}}),
			[]string{pref0 + ".podAffinityTerm: Required value"}},
		{"preferred term's topologyKey", withAffinity(prefer(5, podTerm(""))), []string{pref0 + ".podAffinityTerm.topologyKey: Required value: can not be empty"}},
		{"bad namespace", withAffinity(anti(badNS)), []string{req0 + `.namespaces[0]: Invalid value: "Prod"`}},
		{"matchLabelKeys refused", withAffinity(anti(matchKeys)), []string{req0 + ".matchLabelKeys: not supported"}},
		{"mismatchLabelKeys refused", withAffinity(anti(mismatchKeys)), []string{req0 + ".mismatchLabelKeys: not supported"}},
		{"bad selector", withAffinity(anti(badSelector)), []string{req0 + ".labelSelector", "values: must be non-empty"}},
	})
}

func TestTopologySpreadValidation(t *testing.T) {
	with := func(cs ...*v1.TopologySpreadConstraint) func() v1.Object {
		return func() v1.Object { p := pod(); p.Spec.TopologySpreadConstraints = cs; return p }
	}
	tsc := func(skew int32, key, when string) *v1.TopologySpreadConstraint {
		return &v1.TopologySpreadConstraint{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}
	}
	i32 := func(v int32) *int32 { return &v }
	str := func(v string) *string { return &v }
	const c0 = "spec.topologySpreadConstraints[0]"
	full := tsc(1, "topology.kubernetes.io/zone", "DoNotSchedule")
	full.MinDomains, full.NodeAffinityPolicy, full.NodeTaintsPolicy = i32(3), str("Ignore"), str("Honor")
	minSoft := tsc(1, "zone", "ScheduleAnyway")
	minSoft.MinDomains = i32(2)
	minZero := tsc(1, "zone", "DoNotSchedule")
	minZero.MinDomains = i32(0)
	badPolicy := tsc(1, "zone", "DoNotSchedule")
	badPolicy.NodeTaintsPolicy = str("Always")
	keys := tsc(1, "zone", "DoNotSchedule")
	keys.MatchLabelKeys = []string{"pod-template-hash"}
	runValidation(t, []validationCase{
		{"zone and hostname", with(tsc(1, "topology.kubernetes.io/zone", "DoNotSchedule"), tsc(2, "kubernetes.io/hostname", "ScheduleAnyway")), nil},
		{"every field", with(full), nil},
		{"same key, both kinds", with(tsc(1, "zone", "DoNotSchedule"), tsc(1, "zone", "ScheduleAnyway")), nil},
		{"maxSkew 0", with(tsc(0, "zone", "DoNotSchedule")), []string{c0 + ".maxSkew: Invalid value: 0: must be greater than zero"}},
		{"no topologyKey", with(tsc(1, "", "DoNotSchedule")), []string{c0 + ".topologyKey: Required value: can not be empty"}},
		{"whenUnsatisfiable", with(tsc(1, "zone", "Never")), []string{c0 + `.whenUnsatisfiable: Unsupported value: "Never": supported values: "DoNotSchedule", "ScheduleAnyway"`}},
		{"duplicate", with(tsc(1, "zone", "DoNotSchedule"), tsc(2, "zone", "DoNotSchedule")),
			[]string{`spec.topologySpreadConstraints[1].{topologyKey, whenUnsatisfiable}: Duplicate value: "{zone, DoNotSchedule}"`}},
		{"minDomains with ScheduleAnyway", with(minSoft), []string{c0 + ".minDomains: Invalid value: 2: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway"}},
		{"minDomains 0", with(minZero), []string{c0 + ".minDomains: Invalid value: 0: must be greater than zero"}},
		{"policy", with(badPolicy), []string{c0 + `.nodeTaintsPolicy: Unsupported value: "Always": supported values: "Honor", "Ignore"`}},
		{"matchLabelKeys refused", with(keys), []string{c0 + ".matchLabelKeys: not supported"}},
	})
}
