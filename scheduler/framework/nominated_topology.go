package framework

import "math"

// Pods nominated to a node count in the pod affinity and spread counts of
// the decisions that filter that node, as in Kubernetes'
// RunFilterPluginsWithNominatedPods: there the InterPodAffinity and
// PodTopologySpread PreFilter states get AddPod for each nominated pod of
// at least the deciding pod's priority; here the decision's TopologyState
// gets the same additions on a copy, for that node only.

// SpreadDomain is the value of sc's topology key on n when n counts for
// the constraint of pi (Kubernetes' PodTopologySpread node eligibility):
// n has the keys of all of pi's constraints of the same kind (hard or
// soft) and passes sc's nodeAffinityPolicy and nodeTaintsPolicy.
func (pi *PodInfo) SpreadDomain(n *Node, sc *SpreadConstraint) (string, bool) {
	for i := range pi.Spread {
		if o := &pi.Spread[i]; o.Hard == sc.Hard {
			if _, ok := n.Labels[o.TopologyKey]; !ok {
				return "", false
			}
		}
	}
	if sc.HonorAffinity && !pi.NodeMatchesAffinity(n) {
		return "", false
	}
	if sc.HonorTaints && !pi.ToleratesNode(n) {
		return "", false
	}
	return n.Labels[sc.TopologyKey], true
}

// WithPods is s (nil: nothing counted yet) with the pods added counted
// as if they ran on n, for the filters: the required affinity and
// anti-affinity counts of pi's terms, the existing pods' required
// anti-affinity selecting pi, and the spread counts (scores are not
// affected, as in Kubernetes). nsLabels gives a namespace's labels
// (namespaceSelector; nil: none). It returns s itself when no added pod
// changes a count, else a copy: s is shared by the whole decision.
func (s *TopologyState) WithPods(pi *PodInfo, n *Node, added []*PodInfo, nsLabels func(string) map[string]string) *TopologyState {
	if nsLabels == nil {
		nsLabels = func(string) map[string]string { return nil }
	}
	var out *TopologyState
	edit := func() *TopologyState {
		if out == nil {
			out = s.cloneForFilters()
		}
		return out
	}
	bump := func(m *map[TopologyPair]int64, key string) bool {
		v, ok := n.Labels[key]
		if !ok {
			return false
		}
		if *m == nil {
			*m = map[TopologyPair]int64{}
		}
		(*m)[TopologyPair{Key: key, Value: v}]++
		return true
	}
	for _, np := range added {
		if pa := pi.PodAffinity; pa != nil {
			if len(pa.Required) > 0 {
				all := true
				for i := range pa.Required {
					if !pa.Required[i].Matches(np.Namespace, np.Labels, nsLabels) {
						all = false
						break
					}
				}
				if all {
					for i := range pa.Required {
						bump(&edit().AffinityCounts, pa.Required[i].TopologyKey)
					}
				}
			}
			for i := range pa.AntiRequired {
				if t := &pa.AntiRequired[i]; t.Matches(np.Namespace, np.Labels, nsLabels) {
					bump(&edit().AntiCounts, t.TopologyKey)
				}
			}
		}
		if na := np.PodAffinity; na != nil {
			for i := range na.AntiRequired {
				t := &na.AntiRequired[i]
				if !t.Matches(pi.Namespace, pi.Labels, nsLabels) {
					continue
				}
				if st := edit(); bump(&st.ExistingAnti, t.TopologyKey) && !containsString(st.ExistingAntiKeys, t.TopologyKey) {
					st.ExistingAntiKeys = append(st.ExistingAntiKeys, t.TopologyKey)
				}
			}
		}
		for i := range pi.Spread {
			sc := &pi.Spread[i]
			if s == nil || i >= len(s.Spread) {
				break // the cache computes a spread state for every pod with constraints
			}
			if np.Namespace != pi.Namespace || !sc.Selector.Matches(np.Labels) {
				continue
			}
			v, ok := pi.SpreadDomain(n, sc)
			if !ok {
				continue
			}
			ss := &edit().Spread[i]
			ss.Counts[v]++
			ss.Min = math.MaxInt64
			for _, c := range ss.Counts {
				ss.Min = min(ss.Min, c)
			}
			if len(ss.Counts) < ss.Domains || ss.Domains == 0 || int64(ss.Domains) < sc.MinDomains {
				ss.Min = 0
			}
		}
	}
	if out == nil {
		return s
	}
	return out
}

// cloneForFilters copies what the filters read, so that WithPods may
// change it; the score-only fields are shared.
func (s *TopologyState) cloneForFilters() *TopologyState {
	if s == nil {
		return &TopologyState{}
	}
	out := *s
	out.AffinityCounts = clonePairs(s.AffinityCounts)
	out.AntiCounts = clonePairs(s.AntiCounts)
	out.ExistingAnti = clonePairs(s.ExistingAnti)
	out.ExistingAntiKeys = append([]string(nil), s.ExistingAntiKeys...)
	out.Spread = make([]SpreadState, len(s.Spread))
	for i, ss := range s.Spread {
		out.Spread[i] = ss
		out.Spread[i].Counts = make(map[string]int64, len(ss.Counts)+1)
		for k, v := range ss.Counts {
			out.Spread[i].Counts[k] = v
		}
	}
	return &out
}

func clonePairs(m map[TopologyPair]int64) map[TopologyPair]int64 {
	if m == nil {
		return nil
	}
	out := make(map[TopologyPair]int64, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
