package plugins

import "github.com/tugboat/tugboat/scheduler/framework"

// LeastAllocated prefers nodes with the most cpu and memory left after
// placing the pod (equal weights), so load spreads over the cluster.
type LeastAllocated struct{}

func (LeastAllocated) Name() string { return "LeastAllocated" }

func (LeastAllocated) Score(pi *framework.PodInfo, ni *framework.NodeInfo) int64 {
	alloc := ni.Node.Allocatable
	cpu := leastScore(ni.NonZeroRequested.MilliCPU+pi.NonZeroRequest.MilliCPU, alloc.MilliCPU)
	mem := leastScore(ni.NonZeroRequested.Memory+pi.NonZeroRequest.Memory, alloc.Memory)
	return (cpu + mem) / 2
}

func leastScore(requested, capacity int64) int64 {
	if capacity <= 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// BalancedAllocation prefers nodes whose cpu and memory would be used in
// the same proportion after placing the pod, so neither runs out while
// the other idles.
type BalancedAllocation struct{}

func (BalancedAllocation) Name() string { return "BalancedAllocation" }

func (BalancedAllocation) Score(pi *framework.PodInfo, ni *framework.NodeInfo) int64 {
	alloc := ni.Node.Allocatable
	cpu := fraction(ni.NonZeroRequested.MilliCPU+pi.NonZeroRequest.MilliCPU, alloc.MilliCPU)
	mem := fraction(ni.NonZeroRequested.Memory+pi.NonZeroRequest.Memory, alloc.Memory)
	diff := cpu - mem
	if diff < 0 {
		diff = -diff
	}
	return int64((1 - diff/2) * framework.MaxNodeScore)
}

func fraction(requested, capacity int64) float64 {
	if capacity <= 0 || requested >= capacity {
		return 1
	}
	return float64(requested) / float64(capacity)
}

// OwnerSpread prefers nodes running fewer pods of the pod's controller, so
// the replicas of a ReplicaSet land on different nodes. Pods without a
// controller score the same everywhere.
type OwnerSpread struct{}

func (OwnerSpread) Name() string { return "OwnerSpread" }

// Score is the raw count of the owner's pods on the node; Normalize turns
// it into a score.
func (OwnerSpread) Score(pi *framework.PodInfo, ni *framework.NodeInfo) int64 {
	if pi.Owner == "" {
		return 0
	}
	return int64(ni.OwnerCount(pi.Owner))
}

// Normalize maps counts to MaxNodeScore*(max-count)/max: the emptiest
// nodes score highest.
func (OwnerSpread) Normalize(_ *framework.PodInfo, scores []int64) {
	var top int64
	for _, s := range scores {
		top = max(top, s)
	}
	for i, s := range scores {
		if top == 0 {
			scores[i] = framework.MaxNodeScore
		} else {
			scores[i] = framework.MaxNodeScore * (top - s) / top
		}
	}
}

// NodeAffinityScore prefers nodes matching the pod's preferred node
// affinity: a node scores the sum of the weights of the terms it
// matches, scaled so the best node scores MaxNodeScore (Kubernetes'
// NodeAffinity score). Pods without preferences score 0 everywhere.
type NodeAffinityScore struct{}

func (NodeAffinityScore) Name() string { return "NodeAffinity" }

func (NodeAffinityScore) Score(pi *framework.PodInfo, ni *framework.NodeInfo) int64 {
	var sum int64
	for _, t := range pi.PreferredAffinity {
		if t.Term.Matches(ni.Node.Labels, ni.Node.Name) {
			sum += t.Weight
		}
	}
	return sum
}

// Normalize scales the sums to [0, MaxNodeScore], the highest to the top.
func (NodeAffinityScore) Normalize(_ *framework.PodInfo, scores []int64) {
	defaultNormalize(scores, false)
}

// defaultNormalize is Kubernetes' DefaultNormalizeScore: scores scaled so
// the highest is MaxNodeScore; reversed, the lowest is. All zero stays
// zero (or MaxNodeScore when reversed).
func defaultNormalize(scores []int64, reverse bool) {
	var top int64
	for _, s := range scores {
		top = max(top, s)
	}
	for i, s := range scores {
		switch {
		case top == 0 && reverse:
			scores[i] = framework.MaxNodeScore
		case top == 0:
			scores[i] = 0
		case reverse:
			scores[i] = framework.MaxNodeScore - framework.MaxNodeScore*s/top
		default:
			scores[i] = framework.MaxNodeScore * s / top
		}
	}
}
