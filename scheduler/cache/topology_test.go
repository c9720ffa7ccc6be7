package cache

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

func zonedNode(name, zone string) *v1.Node {
	n := node(name)
	n.Metadata.Labels = map[string]string{"zone": zone}
	return n
}

func webPod(name, nodeName string) *v1.Pod {
	p := pod(name, nodeName, "100m")
	p.Metadata.Labels = map[string]string{"app": "web"}
	return p
}

// spreadCounts is the zone counts the cache computes for a pod spreading
// app=web over zones.
func spreadCounts(c *Cache) map[string]int64 {
	p := webPod("incoming", "")
	p.Spec.TopologySpreadConstraints = []*v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule",
		LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	st := c.Topology(framework.NewPodInfo(p), func(string) map[string]string { return nil })
	return st.Spread[0].Counts
}

func TestGroupsFollowPods(t *testing.T) {
	c := New(Config{})
	c.AddNode(zonedNode("a1", "a"))
	c.AddNode(zonedNode("a2", "a"))
	c.AddNode(zonedNode("b1", "b"))
	c.AddPod(webPod("w1", "a1"))
	c.AddPod(webPod("w2", "a2"))
	c.AddPod(webPod("w3", "b1"))
	if len(c.groups) != 1 {
		t.Fatalf("%d groups for three pods with the same labels, want 1", len(c.groups))
	}
	if got := spreadCounts(c); got["a"] != 2 || got["b"] != 1 {
		t.Errorf("counts %v, want a:2 b:1", got)
	}
	// A relabelled pod leaves the selector; a terminating one no longer
	// counts for spread; an assumed one counts at once, and not once forgotten.
	relabelled := webPod("w1", "a1")
	relabelled.Metadata.Labels["app"] = "api"
	c.AddPod(relabelled)
	deleting := webPod("w3", "b1")
	deleting.Metadata.DeletionTimestamp = timestamppb.Now()
	c.AddPod(deleting)
	if got := spreadCounts(c); got["a"] != 1 || got["b"] != 0 {
		t.Errorf("after relabel and delete: %v, want a:1 b:0", got)
	}
	if err := c.AssumePod(framework.NewPodInfo(webPod("w4", "")), "b1"); err != nil {
		t.Fatal(err)
	}
	if got := spreadCounts(c); got["b"] != 1 {
		t.Errorf("assumed pod not counted: %v", got)
	}
	c.ForgetPod("default/w4")
	for _, k := range []string{"default/w1", "default/w2", "default/w3"} {
		c.RemovePod(k)
	}
	if len(c.groups) != 0 || len(c.affinityGroups) != 0 {
		t.Errorf("%d groups left after every pod is gone", len(c.groups))
	}
	if got := spreadCounts(c); len(got) != 0 {
		t.Errorf("empty cluster counts %v, want none", got)
	}
	// The zone index follows the nodes: relabelled, removed, added.
	moved := zonedNode("a2", "b")
	c.AddNode(moved)
	c.RemoveNode("a1")
	c.AddNode(zonedNode("c1", "c"))
	if got := c.keyValues("zone"); len(got) != 2 || got["b"] != 2 || got["c"] != 1 {
		t.Errorf("zone index %v, want b:2 c:1", got)
	}
}

// TestPlainPodSkipsTopology: with no pod affinity anywhere, a pod without
// its own gets no topology state (the common path costs nothing).
func TestPlainPodSkipsTopology(t *testing.T) {
	c := New(Config{})
	c.AddNode(zonedNode("a1", "a"))
	c.AddPod(webPod("w1", "a1"))
	if st := c.Topology(framework.NewPodInfo(webPod("p", "")), nil); st != nil {
		t.Errorf("topology state %+v for a plain pod", st)
	}
	anti := webPod("w2", "a1")
	anti.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []*v1.PodAffinityTerm{
		{TopologyKey: "zone", LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}}
	c.AddPod(anti)
	st := c.Topology(framework.NewPodInfo(webPod("p", "")), func(string) map[string]string { return nil })
	if st == nil || st.ExistingAnti[framework.TopologyPair{Key: "zone", Value: "a"}] != 1 {
		t.Errorf("existing anti-affinity not seen: %+v", st)
	}
}
