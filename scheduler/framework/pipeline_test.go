package framework_test

import (
	"fmt"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
	"github.com/tugboat/tugboat/scheduler/framework/plugins"
)

func mkNode(name, cpu, mem string, mod ...func(*v1.Node)) *framework.NodeInfo {
	n := &v1.Node{
		Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:     &v1.NodeSpec{},
		Status: &v1.NodeStatus{
			Allocatable: map[string]string{"cpu": cpu, "memory": mem, "pods": "110"},
			Conditions:  []*v1.Condition{{Type: "Ready", Status: "True"}},
		},
	}
	for _, m := range mod {
		m(n)
	}
	return &framework.NodeInfo{Node: framework.NewNode(n)}
}

func mkPod(name, cpu, mem string, mod ...func(*v1.Pod)) *framework.PodInfo {
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "i",
			Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": cpu, "memory": mem}}}}},
	}
	for _, m := range mod {
		m(p)
	}
	return framework.NewPodInfo(p)
}

func defaultPipeline(t testing.TB, pct, par int) *framework.Pipeline {
	filters, err := plugins.NewFilters(plugins.FilterNames())
	if err != nil {
		t.Fatal(err)
	}
	scores, err := plugins.NewScores(plugins.DefaultScores())
	if err != nil {
		t.Fatal(err)
	}
	return framework.NewPipeline(framework.PipelineConfig{Filters: filters, Scores: scores, PercentageOfNodesToScore: pct, Parallelism: par, Seed: 1})
}

func TestUnschedulableMessage(t *testing.T) {
	nodes := []*framework.NodeInfo{
		mkNode("small-1", "1", "8Gi"),
		mkNode("small-2", "1", "8Gi"),
		mkNode("small-3", "1", "8Gi"),
		mkNode("labelled", "8", "8Gi", func(n *v1.Node) { n.Metadata.Labels["disk"] = "hdd" }),
		mkNode("gpu", "8", "8Gi", func(n *v1.Node) {
			n.Metadata.Labels["disk"] = "ssd"
			n.Spec.Taints = []*v1.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}}
		}),
	}
	for _, n := range nodes[:3] {
		n.Node.Labels["disk"] = "ssd"
	}
	pod := mkPod("p", "2", "1Gi", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	_, fe := defaultPipeline(t, 0, 1).Schedule(pod, nodes, nil)
	if fe == nil {
		t.Fatal("pod scheduled, want unschedulable")
	}
	want := "0/5 nodes are available: 3 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: gpu}."
	if fe.Error() != want {
		t.Errorf("message\n got %q\nwant %q", fe.Error(), want)
	}
	wantEvents := framework.NodeAdded | framework.NodeAllocatableChanged | framework.PodRemoved | framework.NodeLabelsChanged | framework.NodeTaintsChanged
	if fe.Events != wantEvents {
		t.Errorf("events %b, want %b", fe.Events, wantEvents)
	}
}

func TestFitMessage(t *testing.T) {
	tests := []struct {
		n       int
		reasons map[string]int
		want    string
	}{
		{0, map[string]int{}, "0/0 nodes are available."},
		{3, map[string]int{"b": 1, "a": 1, "c": 1}, "0/3 nodes are available: 1 a, 1 b, 1 c."},
		{4, map[string]int{"Too many pods": 1, "Insufficient memory": 3, "Insufficient cpu": 3}, "0/4 nodes are available: 3 Insufficient cpu, 3 Insufficient memory, 1 Too many pods."},
		{12, map[string]int{"x": 2, "y": 10}, "0/12 nodes are available: 10 y, 2 x."},
	}
	for _, tt := range tests {
		if got := framework.FitMessage(tt.n, tt.reasons); got != tt.want {
			t.Errorf("FitMessage(%d, %v) = %q, want %q", tt.n, tt.reasons, got, tt.want)
		}
	}
}

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct{ nodes, pct, want int }{
		{50, 0, 50}, {99, 10, 99}, {100, 0, 100},
		{1000, 0, 420}, {5000, 0, 500}, {10000, 0, 500}, {1000, 5, 100}, {1000, 100, 1000}, {1000, 30, 300},
	}
	p := defaultPipeline(t, 0, 1)
	for _, tt := range tests {
		q := framework.NewPipeline(framework.PipelineConfig{PercentageOfNodesToScore: tt.pct})
		if tt.pct == 0 {
			q = p
		}
		if got := q.NumFeasibleNodesToFind(tt.nodes); got != tt.want {
			t.Errorf("NumFeasibleNodesToFind(%d) at %d%% = %d, want %d", tt.nodes, tt.pct, got, tt.want)
		}
	}
}

func TestPicksLeastAllocated(t *testing.T) {
	busy := mkNode("busy", "4", "4Gi")
	busy.AddPod(mkPod("x", "3", "3Gi"))
	idle := mkNode("idle", "4", "4Gi")
	res, fe := defaultPipeline(t, 0, 1).Schedule(mkPod("p", "100m", "100Mi"), []*framework.NodeInfo{busy, idle}, nil)
	if fe != nil || res.Node != idle {
		t.Fatalf("picked %v (%v), want idle", res.Node.Name(), fe)
	}
}

func TestSpreadsOwnersAndBreaksTiesAtRandom(t *testing.T) {
	owned := func(p *v1.Pod) {
		p.Metadata.OwnerReferences = []*v1.OwnerReference{{Uid: "rs-1", Controller: true}}
	}
	a, b, c := mkNode("a", "4", "4Gi"), mkNode("b", "4", "4Gi"), mkNode("c", "4", "4Gi")
	a.AddPod(mkPod("x", "0", "0", owned))
	p := defaultPipeline(t, 100, 1)
	picked := map[string]int{}
	for i := 0; i < 200; i++ {
		res, fe := p.Schedule(mkPod("p", "0", "0", owned), []*framework.NodeInfo{a, b, c}, nil)
		if fe != nil {
			t.Fatal(fe)
		}
		picked[res.Node.Name()]++
	}
	if picked["a"] != 0 || picked["b"] < 50 || picked["c"] < 50 {
		t.Errorf("picks %v: want only b and c, about evenly", picked)
	}
}

func TestSamplesAndRotates(t *testing.T) {
	for _, par := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("parallelism=%d", par), func(t *testing.T) {
			var nodes []*framework.NodeInfo
			for i := 0; i < 1000; i++ {
				nodes = append(nodes, mkNode(fmt.Sprintf("n%d", i), "4", "4Gi"))
			}
			p := defaultPipeline(t, 10, par)
			seen := map[string]bool{}
			for i := 0; i < 20; i++ {
				res, fe := p.Schedule(mkPod("p", "1", "1Gi"), nodes, nil)
				if fe != nil {
					t.Fatal(fe)
				}
				if res.Feasible < 100 || res.Feasible > 100+par*128 {
					t.Fatalf("scored %d nodes, want about 100", res.Feasible)
				}
				seen[res.Node.Name()] = true
			}
			if len(seen) < 15 {
				t.Errorf("20 decisions used only %d distinct nodes: the window does not rotate", len(seen))
			}
		})
	}
}

func TestScheduleDoesNotAllocate(t *testing.T) {
	var nodes []*framework.NodeInfo
	for i := 0; i < 500; i++ {
		nodes = append(nodes, mkNode(fmt.Sprintf("n%d", i), "4", "4Gi"))
	}
	p := defaultPipeline(t, 0, 1)
	pod := mkPod("p", "1", "1Gi")
	allocs := testing.AllocsPerRun(50, func() {
		if _, fe := p.Schedule(pod, nodes, nil); fe != nil {
			t.Fatal(fe)
		}
	})
	if allocs != 0 {
		t.Errorf("Schedule allocates %v times per decision, want 0", allocs)
	}
}

func BenchmarkSchedule(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, par := range []int{1, 2} {
			b.Run(fmt.Sprintf("nodes=%d/parallelism=%d", n, par), func(b *testing.B) {
				var nodes []*framework.NodeInfo
				for i := 0; i < n; i++ {
					nodes = append(nodes, mkNode(fmt.Sprintf("n%d", i), "32", "64Gi"))
				}
				p := defaultPipeline(b, 0, par)
				pod := mkPod("p", "100m", "100Mi", func(p *v1.Pod) {
					p.Metadata.OwnerReferences = []*v1.OwnerReference{{Uid: "rs-1", Controller: true}}
				})
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, fe := p.Schedule(pod, nodes, nil)
					if fe != nil {
						b.Fatal(fe)
					}
					res.Node.AddPod(pod)
				}
			})
		}
	}
}

// A node's room freed by a preemption is kept for the pod nominated to it:
// a pod of lower or equal priority does not get it (the message says why,
// as if the nominated pod ran there), a more important one does, and the
// nominated pod itself goes to its node first even when another fits too.
func TestNominatedPodsKeepTheirRoom(t *testing.T) {
	prio := func(v int32) func(*v1.Pod) { return func(p *v1.Pod) { p.Spec.Priority = v } }
	nominatedTo := func(n string) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Status = &v1.PodStatus{NominatedNodeName: n} }
	}
	freed := mkNode("freed", "1", "4Gi")
	high := mkPod("high", "600m", "64Mi", prio(1000), nominatedTo("freed"))
	noms := framework.Nominations{"freed": {high}}
	p := defaultPipeline(t, 0, 1)

	_, fe := p.Schedule(mkPod("medium", "600m", "64Mi", prio(500)), []*framework.NodeInfo{freed}, noms)
	if fe == nil {
		t.Fatal("a medium pod took the room kept for the high one")
	}
	if got, want := fe.Error(), "0/1 nodes are available: 1 Insufficient cpu."; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if _, fe := p.Schedule(mkPod("equal", "600m", "64Mi", prio(1000)), []*framework.NodeInfo{freed}, noms); fe == nil {
		t.Error("a pod of the nominated pod's own priority took its room")
	}
	if res, fe := p.Schedule(mkPod("small", "300m", "64Mi", prio(500)), []*framework.NodeInfo{freed}, noms); fe != nil {
		t.Errorf("a pod that fits beside the nominated one: %v", fe)
	} else if res.Node != freed {
		t.Errorf("small pod on %s", res.Node.Name())
	}
	if _, fe := p.Schedule(mkPod("urgent", "600m", "64Mi", prio(2000)), []*framework.NodeInfo{freed}, noms); fe != nil {
		t.Errorf("a more important pod was kept out: %v", fe)
	}
	// The nominated pod does not count against itself, and its node is
	// tried first.
	other := mkNode("other", "4", "4Gi")
	for range 5 {
		res, fe := p.Schedule(high, []*framework.NodeInfo{other, freed}, noms)
		if fe != nil || res.Node != freed {
			t.Fatalf("the nominated pod: %v, on %v; want its nominated node", fe, res.Node)
		}
	}
	// Without nominations the node is the medium pod's.
	if _, fe := p.Schedule(mkPod("medium", "600m", "64Mi", prio(500)), []*framework.NodeInfo{freed}, nil); fe != nil {
		t.Errorf("without nominations: %v", fe)
	}
}
