package framework

import (
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Inter-pod affinity and topology spread need to know where the pods
// matching a selector run, by topology domain (the nodes sharing a value
// of a label). The cache answers that once per decision (Cache.Topology:
// it keeps pods grouped by namespace, labels and affinity, so it visits
// each group once, not each pod on each node) into a TopologyState; the
// InterPodAffinity and PodTopologySpread filters and scores then only
// look up the node's label values in it.

// AffinityTerm is a compiled PodAffinityTerm of a pod.
type AffinityTerm struct {
	Selector labels.Selector
	// Namespaces the selected pods may be in; with NamespaceSelector set,
	// also every namespace whose labels it matches.
	Namespaces        map[string]bool
	NamespaceSelector labels.Selector
	HasNSSelector     bool
	TopologyKey       string
	Weight            int64 // preferred terms only
}

// Matches reports whether a pod in namespace ns with labels lbls is
// selected by the term; nsLabels are that namespace's labels.
func (t *AffinityTerm) Matches(ns string, lbls map[string]string, nsLabels func(string) map[string]string) bool {
	if !t.Namespaces[ns] && !(t.HasNSSelector && t.NamespaceSelector.Matches(nsLabels(ns))) {
		return false
	}
	return t.Selector.Matches(lbls)
}

// PodAffinity is a pod's compiled pod affinity and anti-affinity.
type PodAffinity struct {
	Required, Preferred         []AffinityTerm
	AntiRequired, AntiPreferred []AffinityTerm
}

// compileAffinity compiles the pod affinity of a pod in namespace ns; nil
// if it has none.
func compileAffinity(ns string, a *v1.Affinity) (*PodAffinity, error) {
	pa, anti := a.GetPodAffinity(), a.GetPodAntiAffinity()
	if pa == nil && anti == nil {
		return nil, nil
	}
	out := &PodAffinity{}
	var err error
	if out.Required, err = compileTerms(ns, pa.GetRequiredDuringSchedulingIgnoredDuringExecution(), nil); err != nil {
		return nil, err
	}
	if out.Preferred, err = compileTerms(ns, nil, pa.GetPreferredDuringSchedulingIgnoredDuringExecution()); err != nil {
		return nil, err
	}
	if out.AntiRequired, err = compileTerms(ns, anti.GetRequiredDuringSchedulingIgnoredDuringExecution(), nil); err != nil {
		return nil, err
	}
	if out.AntiPreferred, err = compileTerms(ns, nil, anti.GetPreferredDuringSchedulingIgnoredDuringExecution()); err != nil {
		return nil, err
	}
	if len(out.Required)+len(out.Preferred)+len(out.AntiRequired)+len(out.AntiPreferred) == 0 {
		return nil, nil
	}
	return out, nil
}

func compileTerms(ns string, required []*v1.PodAffinityTerm, preferred []*v1.WeightedPodAffinityTerm) ([]AffinityTerm, error) {
	var out []AffinityTerm
	add := func(t *v1.PodAffinityTerm, w int64) error {
		sel, err := labels.FromLabelSelector(t.GetLabelSelector())
		if err != nil {
			return err
		}
		at := AffinityTerm{Selector: sel, TopologyKey: t.GetTopologyKey(), Weight: w, Namespaces: map[string]bool{}}
		for _, n := range t.GetNamespaces() {
			at.Namespaces[n] = true
		}
		if t.GetNamespaceSelector() != nil {
			if at.NamespaceSelector, err = labels.FromLabelSelector(t.NamespaceSelector); err != nil {
				return err
			}
			at.HasNSSelector = true
		} else if len(at.Namespaces) == 0 {
			at.Namespaces[ns] = true // neither: the pod's own namespace
		}
		out = append(out, at)
		return nil
	}
	for _, t := range required {
		if err := add(t, 1); err != nil {
			return nil, err
		}
	}
	for _, w := range preferred {
		if err := add(w.GetPodAffinityTerm(), int64(w.GetWeight())); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SpreadConstraint is a compiled topologySpreadConstraint.
type SpreadConstraint struct {
	MaxSkew     int64
	TopologyKey string
	// Hard is whenUnsatisfiable DoNotSchedule (a filter); else a score.
	Hard       bool
	Selector   labels.Selector
	MinDomains int64 // 0: unset
	// HonorAffinity: only nodes matching the pod's nodeSelector and
	// required node affinity count (nodeAffinityPolicy Honor, default).
	HonorAffinity bool
	// HonorTaints: only nodes whose taints the pod tolerates count
	// (nodeTaintsPolicy Honor; default Ignore).
	HonorTaints bool
	// SelfMatch is 1 if the pod itself matches Selector.
	SelfMatch int64
}

func compileSpread(pod *v1.Pod) ([]SpreadConstraint, error) {
	var out []SpreadConstraint
	for _, c := range pod.GetSpec().GetTopologySpreadConstraints() {
		sel, err := labels.FromLabelSelector(c.GetLabelSelector())
		if err != nil {
			return nil, err
		}
		sc := SpreadConstraint{
			MaxSkew: int64(c.MaxSkew), TopologyKey: c.TopologyKey, Hard: c.WhenUnsatisfiable == "DoNotSchedule",
			Selector: sel, MinDomains: int64(c.GetMinDomains()),
			HonorAffinity: c.GetNodeAffinityPolicy() != "Ignore", HonorTaints: c.GetNodeTaintsPolicy() == "Honor",
		}
		if sel.Matches(pod.GetMetadata().GetLabels()) {
			sc.SelfMatch = 1
		}
		out = append(out, sc)
	}
	return out, nil
}

// TopologyPair is one topology domain: a label and its value.
type TopologyPair struct{ Key, Value string }

// TopologyState is what one decision's pod affinity and spread plugins
// read: counts of matching pods per domain, computed by the cache.
type TopologyState struct {
	// AffinityCounts: pods matching all the pod's required affinity terms,
	// per domain of each term's topologyKey.
	AffinityCounts map[TopologyPair]int64
	// AntiCounts: pods matching a required anti-affinity term of the pod,
	// per domain of that term's key.
	AntiCounts map[TopologyPair]int64
	// ExistingAnti: domains where an existing pod's required
	// anti-affinity term matches the pod; ExistingAntiKeys their keys.
	ExistingAnti     map[TopologyPair]int64
	ExistingAntiKeys []string
	// AffinityScore: the InterPodAffinity score of a node is the sum over
	// the node's label values of these (Kubernetes' topologyScore).
	AffinityScore     map[TopologyPair]int64
	AffinityScoreKeys []string
	// Spread is one entry per topology spread constraint of the pod.
	Spread []SpreadState
}

// SpreadState is one constraint's matching pods per domain of its key
// over the eligible nodes.
type SpreadState struct {
	// Counts has the domains with matching pods (a domain missing has 0).
	Counts map[string]int64
	// Domains is how many domains the eligible nodes make.
	Domains int
	// Min is the smallest count (0 when there are fewer domains than
	// minDomains).
	Min int64
	// Weight normalizes soft constraints' scores: log(domains+2).
	Weight float64
}

// GetAffinityCounts is AffinityCounts, nil for a nil state.
func (s *TopologyState) GetAffinityCounts() map[TopologyPair]int64 {
	if s == nil {
		return nil
	}
	return s.AffinityCounts
}

// Empty reports whether the state constrains nothing.
func (s *TopologyState) Empty() bool {
	return s == nil || (len(s.AffinityCounts) == 0 && len(s.AntiCounts) == 0 && len(s.ExistingAnti) == 0 &&
		len(s.AffinityScore) == 0 && len(s.Spread) == 0)
}

// NodeMatchesAffinity reports whether a node may run the pod according to
// its nodeSelector and required node affinity (the NodeAffinity filter's
// test, also nodeAffinityPolicy Honor's).
func (pi *PodInfo) NodeMatchesAffinity(n *Node) bool {
	if pi.AffinityErr != nil || !pi.NodeSelector.Matches(n.Labels) {
		return false
	}
	return pi.Affinity == nil || labels.NodeSelectorMatches(pi.Affinity, n.Labels, n.Name)
}

// ToleratesNode reports whether the pod tolerates every NoSchedule and
// NoExecute taint of the node.
func (pi *PodInfo) ToleratesNode(n *Node) bool {
	for _, t := range n.Taints {
		if (t.Effect == "NoSchedule" || t.Effect == "NoExecute") && !v1.TolerationsTolerate(pi.Tolerations, t) {
			return false
		}
	}
	return true
}
