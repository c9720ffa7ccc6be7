package plugins

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/cache"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// topologyCase places pods on nodes in a real cache, then asks the filter
// and score about an incoming pod on every node.
type topologyCase struct {
	name     string
	nodes    []*v1.Node
	existing map[string][]*v1.Pod // by node
	pod      *v1.Pod
	want     map[string]string // node -> "fits" or the reason
}

func runTopology(t *testing.T, f framework.FilterPlugin, cases []topologyCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := cache.New(cache.Config{})
			for _, n := range tc.nodes {
				c.AddNode(n)
			}
			for node, pods := range tc.existing {
				for _, p := range pods {
					p.Spec.NodeName = node
					c.AddPod(p)
				}
			}
			pi := framework.NewPodInfo(tc.pod)
			pi.Topology = c.Topology(pi, func(string) map[string]string { return nil })
			s := cache.NewSnapshot()
			c.UpdateSnapshot(s)
			for node, want := range tc.want {
				if got := describe(f.Filter(pi, s.Get(node))); got != want {
					t.Errorf("node %s: %s, want %s", node, got, want)
				}
			}
		})
	}
}

func labelled(name string, kv ...string) *v1.Pod {
	p := pod(name, "", "")
	p.Metadata.Labels = map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		p.Metadata.Labels[kv[i]] = kv[i+1]
	}
	return p
}

func with(p *v1.Pod, opts ...func(*v1.Pod)) *v1.Pod {
	for _, o := range opts {
		o(p)
	}
	return p
}

func antiTerm(key string, app string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*v1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}}}
	}
}

func affinityTerm(key string, app string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*v1.PodAffinityTerm{
			{TopologyKey: key, LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}}}
	}
}

func spreadOn(key, when string, skew int32, app string, opts ...func(*v1.TopologySpreadConstraint)) func(*v1.Pod) {
	return func(p *v1.Pod) {
		c := &v1.TopologySpreadConstraint{MaxSkew: skew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
		for _, o := range opts {
			o(c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func TestInterPodAffinityFilter(t *testing.T) {
	zoned := []*v1.Node{
		node("a1", "4", "4Gi", withLabel("zone", "a")), node("a2", "4", "4Gi", withLabel("zone", "a")),
		node("b1", "4", "4Gi", withLabel("zone", "b")), node("x", "4", "4Gi"),
	}
	const (
		aff  = "node(s) didn't match pod affinity rules"
		anti = "node(s) didn't match pod anti-affinity rules"
		exst = "node(s) didn't satisfy existing pods anti-affinity rules"
	)
	other := labelled("other", "app", "db")
	other.Metadata.Namespace = "elsewhere"
	runTopology(t, NewInterPodAffinity(), []topologyCase{
		{"anti-affinity by zone", zoned, map[string][]*v1.Pod{"a1": {labelled("w0", "app", "web")}},
			with(labelled("w1", "app", "web"), antiTerm("zone", "web")),
			map[string]string{"a1": anti, "a2": anti, "b1": "fits", "x": "fits"}},
		{"affinity by zone; a node without the key never fits", zoned, map[string][]*v1.Pod{"a2": {labelled("db", "app", "db")}},
			with(labelled("c", "app", "cache"), affinityTerm("zone", "db")),
			map[string]string{"a1": "fits", "a2": "fits", "b1": aff, "x": aff}},
		{"a pod of another namespace is not selected", zoned, map[string][]*v1.Pod{"a2": {other}},
			with(labelled("c", "app", "cache"), affinityTerm("zone", "db")),
			map[string]string{"a1": aff, "b1": aff}},
		{"first pod of a self-affine group fits where the key is", zoned, nil,
			with(labelled("g0", "app", "g"), affinityTerm("zone", "g")),
			map[string]string{"a1": "fits", "b1": "fits", "x": aff}},
		{"symmetry: an existing pod's anti-affinity", zoned, map[string][]*v1.Pod{"b1": {with(labelled("q", "app", "quiet"), antiTerm("zone", "noisy"))}},
			labelled("n", "app", "noisy"),
			map[string]string{"a1": "fits", "b1": exst, "x": "fits"}},
		{"affinity is checked first", zoned, map[string][]*v1.Pod{"b1": {with(labelled("q", "app", "quiet"), antiTerm("zone", "noisy"))}},
			with(labelled("n", "app", "noisy"), affinityTerm("zone", "missing")),
			map[string]string{"b1": aff},
		},
	})
}

func TestPodTopologySpreadFilter(t *testing.T) {
	zones := []*v1.Node{
		node("a1", "4", "4Gi", withLabel("zone", "a")), node("b1", "4", "4Gi", withLabel("zone", "b")),
		node("c1", "4", "4Gi", withLabel("zone", "c"), withTaint("dedicated", "x", "NoSchedule")), node("x", "4", "4Gi"),
	}
	const (
		skew    = "node(s) didn't match pod topology spread constraints"
		missing = "node(s) didn't match pod topology spread constraints (missing required label)"
	)
	i32 := func(v int32) *int32 { return &v }
	honor := "Honor"
	web := func(n string) *v1.Pod { return labelled(n, "app", "web") }
	runTopology(t, NewPodTopologySpread(), []topologyCase{
		// c1's taint is ignored by default: zone c counts, with 0 pods.
		{"skew against the empty tainted zone", zones, map[string][]*v1.Pod{"a1": {web("w0")}, "b1": {web("w1")}},
			with(web("w2"), spreadOn("zone", "DoNotSchedule", 1, "web")),
			map[string]string{"a1": skew, "b1": skew, "c1": "fits", "x": missing}},
		{"nodeTaintsPolicy Honor leaves zone c out", zones, map[string][]*v1.Pod{"a1": {web("w0")}, "b1": {web("w1")}},
			with(web("w2"), spreadOn("zone", "DoNotSchedule", 1, "web", func(c *v1.TopologySpreadConstraint) { c.NodeTaintsPolicy = &honor })),
			map[string]string{"a1": "fits", "b1": "fits"}},
		{"minDomains above the domains: the global minimum is 0", zones, map[string][]*v1.Pod{"a1": {web("w0")}},
			with(web("w2"), spreadOn("zone", "DoNotSchedule", 1, "web", func(c *v1.TopologySpreadConstraint) {
				c.NodeTaintsPolicy = &honor
				c.MinDomains = i32(3)
			})),
			map[string]string{"a1": skew, "b1": "fits"}},
		{"a pod its selector does not match adds nothing", zones, map[string][]*v1.Pod{"a1": {web("w0")}, "b1": {web("w1")}},
			with(labelled("other", "app", "other"), spreadOn("zone", "DoNotSchedule", 1, "web")),
			map[string]string{"a1": "fits", "b1": "fits"}},
		{"ScheduleAnyway never refuses", zones, map[string][]*v1.Pod{"a1": {web("w0"), web("w1"), web("w3")}},
			with(web("w2"), spreadOn("zone", "ScheduleAnyway", 1, "web")),
			map[string]string{"a1": "fits", "x": "fits"}},
	})
}

func TestTopologyScores(t *testing.T) {
	c := cache.New(cache.Config{})
	for _, n := range []*v1.Node{node("a1", "4", "4Gi", withLabel("zone", "a")), node("b1", "4", "4Gi", withLabel("zone", "b")), node("x", "4", "4Gi")} {
		c.AddNode(n)
	}
	for i, p := range []*v1.Pod{labelled("w0", "app", "web"), labelled("w1", "app", "web")} {
		p.Spec.NodeName = "a1"
		p.Metadata.Name = p.Metadata.Name + string(rune('a'+i))
		c.AddPod(p)
	}
	s := cache.NewSnapshot()
	c.UpdateSnapshot(s)
	nodes := []*framework.NodeInfo{s.Get("a1"), s.Get("b1"), s.Get("x")}
	scoreAll := func(sp framework.ScorePlugin, p *v1.Pod) []int64 {
		pi := framework.NewPodInfo(p)
		pi.Topology = c.Topology(pi, func(string) map[string]string { return nil })
		out := make([]int64, len(nodes))
		for i, ni := range nodes {
			out[i] = sp.Score(pi, ni)
		}
		sp.(framework.Normalizer).Normalize(pi, out)
		return out
	}
	// Preferred anti-affinity by zone: a1's zone has two matching pods.
	anti := with(labelled("p", "app", "web"), func(p *v1.Pod) {
		p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []*v1.WeightedPodAffinityTerm{
			{Weight: 10, PodAffinityTerm: &v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}}
	})
	if got := scoreAll(InterPodAffinityScore{}, anti); got[0] != 0 || got[1] != 100 || got[2] != 100 {
		t.Errorf("InterPodAffinity scores %v, want a1 0, b1 and x 100", got)
	}
	// ScheduleAnyway by zone: b1 (0 pods) best, a1 (2) worst, x ignored.
	soft := with(labelled("p", "app", "web"), spreadOn("zone", "ScheduleAnyway", 1, "web"))
	if got := scoreAll(PodTopologySpreadScore{}, soft); !(got[1] == 100 && got[0] < got[1] && got[2] == 0) {
		t.Errorf("PodTopologySpread scores %v, want b1 100 > a1, x 0", got)
	}
}
