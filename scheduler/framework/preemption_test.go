package framework_test

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
	"github.com/tugboat/tugboat/scheduler/framework/plugins"
)

func prio(p int32) func(*v1.Pod) { return func(pod *v1.Pod) { pod.Spec.Priority = p } }

// placed puts pods on a node and returns them as victims (the budget
// flag per pod name in protected).
func placed(ni *framework.NodeInfo, protected map[string]bool, pods ...*framework.PodInfo) []framework.Victim {
	var out []framework.Victim
	for i, p := range pods {
		ni.AddPod(p)
		out = append(out, framework.Victim{Info: p, StartTime: int64(i), ViolatesBudget: protected[p.Pod.Metadata.Name]})
	}
	return out
}

func victimNames(c *framework.Candidate) []string {
	var out []string
	for _, v := range c.Victims {
		out = append(out, v.Info.Pod.Metadata.Name)
	}
	return out
}

func TestPreemptionCandidates(t *testing.T) {
	filters, err := plugins.NewFilters(plugins.FilterNames())
	if err != nil {
		t.Fatal(err)
	}
	high := mkPod("high", "600m", "0", prio(1000))
	tests := []struct {
		name      string
		protected map[string]bool
		wantNode  string
		want      []string
	}{
		// n1: three low pods of 300m (two must go); n2: low 500m and mid 400m
		// (only low must go): n2 wins on the smaller sum of priorities.
		{"fewest and least important", nil, "n2", []string{"low-b"}},
		// A budget protects n2's low pod: n1 needs no violation.
		{"budgets first", map[string]bool{"low-b": true}, "n1", []string{"low-a2", "low-a3"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n1, n2 := mkNode("n1", "1", "4Gi"), mkNode("n2", "1", "4Gi")
			gpu := mkNode("gpu", "1", "4Gi", func(n *v1.Node) { n.Spec.Taints = []*v1.Taint{{Key: "gpu", Effect: "NoSchedule"}} })
			on := map[string][]framework.Victim{
				"n1": placed(n1, tc.protected, mkPod("low-a1", "300m", "0", prio(10)), mkPod("low-a2", "300m", "0", prio(10)), mkPod("low-a3", "300m", "0", prio(10))),
				"n2": placed(n2, tc.protected, mkPod("low-b", "500m", "0", prio(10)), mkPod("mid-b", "400m", "0", prio(500))),
			}
			cs, reasons := framework.FindCandidates(high, []*framework.NodeInfo{n1, n2, gpu}, filters, func(n string) []framework.Victim { return on[n] })
			if len(cs) != 2 || reasons != nil {
				t.Fatalf("%d candidates, reasons %v; want n1 and n2", len(cs), reasons)
			}
			best := framework.PickCandidate(cs)
			if best.Node.Name() != tc.wantNode || len(best.Victims) != len(tc.want) {
				t.Fatalf("picked %s with %v, want %s with %v", best.Node.Name(), victimNames(best), tc.wantNode, tc.want)
			}
			for i, n := range victimNames(best) {
				if n != tc.want[i] {
					t.Errorf("victims %v, want %v", victimNames(best), tc.want)
				}
			}
		})
	}
	// Equal priority in the way, or a node no deletion helps: no candidate,
	// and the reasons say so.
	n1 := mkNode("n1", "1", "4Gi")
	on := placed(n1, nil, mkPod("peer", "800m", "0", prio(1000)))
	sel := mkNode("other", "1", "4Gi")
	picky := mkPod("picky", "600m", "0", prio(1000), func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	if cs, reasons := framework.FindCandidates(high, []*framework.NodeInfo{n1}, filters, func(string) []framework.Victim { return on }); cs != nil ||
		reasons[framework.ReasonNoVictims] != 1 {
		t.Errorf("equal priority: %v, %v", cs, reasons)
	}
	if cs, reasons := framework.FindCandidates(picky, []*framework.NodeInfo{sel}, filters, func(string) []framework.Victim { return nil }); cs != nil ||
		reasons[framework.ReasonPreemptionNotHelpful] != 1 {
		t.Errorf("node selector: %v, %v", cs, reasons)
	}
}
