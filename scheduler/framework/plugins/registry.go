package plugins

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/scheduler/framework"
)

// FilterNames are the filters in the order they run (a node is refused by
// the first that refuses it, which decides the reason users see).
func FilterNames() []string {
	return []string{"NodeReady", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "VolumeBinding", "DynamicResources", "NodePorts", "MaxPods", "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"}
}

// DefaultScores are the score plugins with their weights, as --scores
// takes them.
func DefaultScores() []string {
	return []string{"LeastAllocated=1", "BalancedAllocation=1", "OwnerSpread=2", "NodeAffinity=2", "InterPodAffinity=2", "PodTopologySpread=2"}
}

func newFilter(name string) framework.FilterPlugin {
	switch name {
	case "NodeReady":
		return NewNodeReady()
	case "NodeUnschedulable":
		return NewNodeUnschedulable()
	case "TaintToleration":
		return NewTaintToleration()
	case "NodeAffinity":
		return NewNodeAffinity()
	case "VolumeBinding":
		return NewVolumeBinding()
	case "DynamicResources":
		return DynamicResources{}
	case "NodePorts":
		return NewNodePorts()
	case "MaxPods":
		return NewMaxPods()
	case "NodeResourcesFit":
		return NewNodeResourcesFit()
	case "PodTopologySpread":
		return NewPodTopologySpread()
	case "InterPodAffinity":
		return NewInterPodAffinity()
	}
	return nil
}

// ScoreNames are the score plugins --scores knows.
func ScoreNames() []string {
	return []string{"LeastAllocated", "BalancedAllocation", "OwnerSpread", "NodeAffinity", "InterPodAffinity", "PodTopologySpread"}
}

func newScore(name string) framework.ScorePlugin {
	switch name {
	case "LeastAllocated":
		return LeastAllocated{}
	case "BalancedAllocation":
		return BalancedAllocation{}
	case "OwnerSpread":
		return OwnerSpread{}
	case "NodeAffinity":
		return NodeAffinityScore{}
	case "InterPodAffinity":
		return InterPodAffinityScore{}
	case "PodTopologySpread":
		return PodTopologySpreadScore{}
	}
	return nil
}

// NewFilters builds the named filters. They always run in FilterNames'
// order, whatever order names has.
func NewFilters(names []string) ([]framework.FilterPlugin, error) {
	want := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if newFilter(n) == nil {
			return nil, fmt.Errorf("--filters: unknown filter %q (known: %s)", n, strings.Join(FilterNames(), ", "))
		}
		want[n] = true
	}
	var out []framework.FilterPlugin
	for _, n := range FilterNames() {
		if want[n] {
			out = append(out, newFilter(n))
		}
	}
	return out, nil
}

// NewScores builds score plugins from "Name" or "Name=weight" entries
// (weight 1 to 100, default 1).
func NewScores(specs []string) ([]framework.WeightedScore, error) {
	var out []framework.WeightedScore
	seen := map[string]bool{}
	for _, spec := range specs {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		name, w, hasWeight := strings.Cut(spec, "=")
		p := newScore(name)
		if p == nil {
			return nil, fmt.Errorf("--scores: unknown score %q (known: %s)", name, strings.Join(ScoreNames(), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("--scores: %q is listed twice", name)
		}
		seen[name] = true
		weight := int64(1)
		if hasWeight {
			n, err := strconv.ParseInt(w, 10, 64)
			if err != nil || n < 1 || n > 100 {
				return nil, fmt.Errorf("--scores: weight of %s must be an integer from 1 to 100, got %q", name, w)
			}
			weight = n
		}
		out = append(out, framework.WeightedScore{Plugin: p, Weight: weight})
	}
	return out, nil
}
