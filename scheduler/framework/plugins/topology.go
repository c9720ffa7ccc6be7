package plugins

import (
	"math"

	"github.com/tugboat/tugboat/scheduler/framework"
)

// The plugins that place a pod relative to other pods. They read the
// decision's TopologyState (PodInfo.Topology, computed by the cache) and
// look up the node's label values in it, so filtering allocates nothing.

// InterPodAffinity refuses nodes that break the pod's required pod
// affinity (no pod its terms select in the node's domain) or required
// anti-affinity (one in the node's domain), or where an existing pod's
// required anti-affinity selects the pod (symmetry), with Kubernetes'
// reasons and order.
type InterPodAffinity struct {
	affinity, anti, existingAnti *framework.Status
}

// NewInterPodAffinity makes the filter.
func NewInterPodAffinity() *InterPodAffinity {
	return &InterPodAffinity{
		affinity:     framework.NewStatus("node(s) didn't match pod affinity rules"),
		anti:         framework.NewStatus("node(s) didn't match pod anti-affinity rules"),
		existingAnti: framework.NewStatus("node(s) didn't satisfy existing pods anti-affinity rules"),
	}
}

func (f *InterPodAffinity) Name() string { return "InterPodAffinity" }

// Events: a pod added (affinity), removed (anti-affinity) or a node's
// labels changed (its domain).
func (f *InterPodAffinity) Events() framework.ClusterEvent {
	return framework.PodAdded | framework.PodRemoved | framework.NodeLabelsChanged
}

func (f *InterPodAffinity) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	st := pi.Topology
	lbls := ni.Node.Labels
	if pa := pi.PodAffinity; pa != nil && len(pa.Required) > 0 {
		exist := true
		for i := range pa.Required {
			v, ok := lbls[pa.Required[i].TopologyKey]
			if !ok {
				return f.affinity // every term's key must be on the node
			}
			if st == nil || st.AffinityCounts[framework.TopologyPair{Key: pa.Required[i].TopologyKey, Value: v}] <= 0 {
				exist = false
			}
		}
		// The first pod of a set with affinity to itself: no pod matches
		// the terms anywhere, and the pod matches them all.
		if !exist && !(len(st.GetAffinityCounts()) == 0 && selfMatchesAll(pi)) {
			return f.affinity
		}
	}
	if st == nil {
		return nil
	}
	if pa := pi.PodAffinity; pa != nil {
		for i := range pa.AntiRequired {
			if v, ok := lbls[pa.AntiRequired[i].TopologyKey]; ok && st.AntiCounts[framework.TopologyPair{Key: pa.AntiRequired[i].TopologyKey, Value: v}] > 0 {
				return f.anti
			}
		}
	}
	for _, k := range st.ExistingAntiKeys {
		if v, ok := lbls[k]; ok && st.ExistingAnti[framework.TopologyPair{Key: k, Value: v}] > 0 {
			return f.existingAnti
		}
	}
	return nil
}

func selfMatchesAll(pi *framework.PodInfo) bool {
	for i := range pi.PodAffinity.Required {
		t := &pi.PodAffinity.Required[i]
		if !t.Namespaces[pi.Namespace] && !t.HasNSSelector { // a namespaceSelector is checked by the cache; here only names
			return false
		}
		if !t.Selector.Matches(pi.Labels) {
			return false
		}
	}
	return true
}

// PodTopologySpread refuses nodes where placing the pod would make a
// DoNotSchedule constraint's skew (matching pods in the node's domain,
// plus the pod if it matches, minus the fewest in any domain) exceed
// maxSkew, and nodes without the constraint's topology key.
type PodTopologySpread struct {
	skew, missingLabel *framework.Status
}

// NewPodTopologySpread makes the filter.
func NewPodTopologySpread() *PodTopologySpread {
	return &PodTopologySpread{
		skew:         framework.NewStatus("node(s) didn't match pod topology spread constraints"),
		missingLabel: framework.NewStatus("node(s) didn't match pod topology spread constraints (missing required label)"),
	}
}

func (f *PodTopologySpread) Name() string { return "PodTopologySpread" }

func (f *PodTopologySpread) Events() framework.ClusterEvent {
	return framework.PodAdded | framework.PodRemoved | framework.NodeLabelsChanged | framework.NodeTaintsChanged
}

func (f *PodTopologySpread) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if len(pi.Spread) == 0 || pi.Topology == nil {
		return nil
	}
	for i := range pi.Spread {
		sc := &pi.Spread[i]
		if !sc.Hard {
			continue
		}
		v, ok := ni.Node.Labels[sc.TopologyKey]
		if !ok {
			return f.missingLabel
		}
		ss := &pi.Topology.Spread[i]
		if ss.Counts[v]+sc.SelfMatch-ss.Min > sc.MaxSkew {
			return f.skew
		}
	}
	return nil
}

// InterPodAffinityScore prefers nodes in the domains of the pods the
// pod's preferred affinity selects and away from those its preferred
// anti-affinity selects, and likewise for the existing pods' terms
// selecting it (their required affinity counting weight 1); scaled
// min-max to [0, MaxNodeScore] (Kubernetes' InterPodAffinity score).
type InterPodAffinityScore struct{}

func (InterPodAffinityScore) Name() string { return "InterPodAffinity" }

func (InterPodAffinityScore) Score(pi *framework.PodInfo, ni *framework.NodeInfo) int64 {
	st := pi.Topology
	if st == nil {
		return 0
	}
	var sum int64
	for _, k := range st.AffinityScoreKeys {
		if v, ok := ni.Node.Labels[k]; ok {
			sum += st.AffinityScore[framework.TopologyPair{Key: k, Value: v}]
		}
	}
	return sum
}

func (InterPodAffinityScore) Normalize(_ *framework.PodInfo, scores []int64) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0], scores[0]
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	for i, s := range scores {
		if hi == lo {
			scores[i] = 0
		} else {
			scores[i] = framework.MaxNodeScore * (s - lo) / (hi - lo)
		}
	}
}

// PodTopologySpreadScore prefers, for ScheduleAnyway constraints, nodes
// in the domains with the fewest matching pods: a node's raw score is
// the sum over the constraints of its domain's count times log(domains+2)
// plus maxSkew-1, inverted by Normalize (Kubernetes' PodTopologySpread
// score). Nodes without a constraint's key score 0.
type PodTopologySpreadScore struct{}

func (PodTopologySpreadScore) Name() string { return "PodTopologySpread" }

// ignored marks a node without a soft constraint's key.
const ignored = -1

func (PodTopologySpreadScore) Score(pi *framework.PodInfo, ni *framework.NodeInfo) int64 {
	if pi.Topology == nil {
		return 0
	}
	var score float64
	soft := false
	for i := range pi.Spread {
		sc := &pi.Spread[i]
		if sc.Hard {
			continue
		}
		soft = true
		v, ok := ni.Node.Labels[sc.TopologyKey]
		if !ok {
			return ignored
		}
		ss := &pi.Topology.Spread[i]
		score += float64(ss.Counts[v])*ss.Weight + float64(sc.MaxSkew-1)
	}
	if !soft {
		return 0
	}
	return int64(math.Round(score))
}

func (PodTopologySpreadScore) Normalize(pi *framework.PodInfo, scores []int64) {
	lo, hi := int64(math.MaxInt64), int64(0)
	for _, s := range scores {
		if s != ignored {
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	for i, s := range scores {
		switch {
		case s == ignored:
			scores[i] = 0
		case hi == 0:
			scores[i] = framework.MaxNodeScore
		default:
			scores[i] = framework.MaxNodeScore * (hi + lo - s) / hi
		}
	}
}
