package plugins

import (
	"slices"
	"testing"

	"github.com/tugboat/tugboat/scheduler/framework"
)

func TestScores(t *testing.T) {
	tests := []struct {
		name  string
		score framework.ScorePlugin
		pod   *framework.PodInfo
		node  *framework.NodeInfo
		want  int64
	}{
		{"empty node", LeastAllocated{}, framework.NewPodInfo(pod("p", "1", "1Gi")), nodeInfo(node("n", "4", "4Gi")), 75},
		{"half used", LeastAllocated{}, framework.NewPodInfo(pod("p", "1", "1Gi")), nodeInfo(node("n", "4", "4Gi"), pod("a", "1", "1Gi")), 50},
		{"cpu full memory empty", LeastAllocated{}, framework.NewPodInfo(pod("p", "2", "1Gi")), nodeInfo(node("n", "4", "4Gi"), pod("a", "2", "")), 35},
		{"overcommitted scores zero", LeastAllocated{}, framework.NewPodInfo(pod("p", "8", "8Gi")), nodeInfo(node("n", "4", "4Gi")), 0},
		{"request-less pod counts defaults", LeastAllocated{}, framework.NewPodInfo(pod("p", "", "")), nodeInfo(node("n", "1", "1000Mi")), 85},
		{"balanced", BalancedAllocation{}, framework.NewPodInfo(pod("p", "1", "1Gi")), nodeInfo(node("n", "4", "4Gi")), 100},
		{"unbalanced", BalancedAllocation{}, framework.NewPodInfo(pod("p", "2", "0")), nodeInfo(node("n", "4", "4Gi")), 77},
		{"no owner", OwnerSpread{}, framework.NewPodInfo(pod("p", "", "")), nodeInfo(node("n", "4", "4Gi"), pod("a", "", "", ownedBy("rs1"))), 0},
		{"no preference", NodeAffinityScore{}, framework.NewPodInfo(pod("p", "", "")), nodeInfo(node("n", "4", "4Gi", withLabel("zone", "a"))), 0},
		{"preferences summed", NodeAffinityScore{}, framework.NewPodInfo(pod("p", "", "", withPreferred(30, expr("zone", "In", "a", "b")), withPreferred(5, expr("disk", "Exists")), withPreferred(60, expr("zone", "NotIn", "a")))),
			nodeInfo(node("n", "4", "4Gi", withLabel("zone", "a"), withLabel("disk", "ssd"))), 35},
		{"Gt preference", NodeAffinityScore{}, framework.NewPodInfo(pod("p", "", "", withPreferred(7, expr("cores", "Gt", "8")))),
			nodeInfo(node("n", "4", "4Gi", withLabel("cores", "16"))), 7},
		{"owner count", OwnerSpread{}, framework.NewPodInfo(pod("p", "", "", ownedBy("rs1"))), nodeInfo(node("n", "4", "4Gi"), pod("a", "", "", ownedBy("rs1")), pod("b", "", "", ownedBy("rs1")), pod("c", "", "", ownedBy("rs2"))), 2},
	}
	for _, tt := range tests {
		t.Run(tt.score.Name()+"/"+tt.name, func(t *testing.T) {
			if got := tt.score.Score(tt.pod, tt.node); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestOwnerSpreadNormalize(t *testing.T) {
	tests := []struct{ in, want []int64 }{
		{[]int64{0, 0, 0}, []int64{100, 100, 100}},
		{[]int64{0, 2, 4}, []int64{100, 50, 0}},
		{[]int64{3, 3}, []int64{0, 0}},
	}
	for _, tt := range tests {
		got := slices.Clone(tt.in)
		OwnerSpread{}.Normalize(nil, got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("Normalize(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDefaultNormalize(t *testing.T) {
	tests := []struct {
		in      []int64
		reverse bool
		want    []int64
	}{
		{[]int64{0, 0}, false, []int64{0, 0}},
		{[]int64{0, 0}, true, []int64{100, 100}},
		{[]int64{35, 0, 70}, false, []int64{50, 0, 100}},
		{[]int64{35, 0, 70}, true, []int64{50, 100, 0}},
	}
	for _, tt := range tests {
		got := slices.Clone(tt.in)
		defaultNormalize(got, tt.reverse)
		if !slices.Equal(got, tt.want) {
			t.Errorf("defaultNormalize(%v, %v) = %v, want %v", tt.in, tt.reverse, got, tt.want)
		}
	}
}
