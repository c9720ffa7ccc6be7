package cache

import (
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

func node(name string) *v1.Node {
	return &v1.Node{
		Metadata: &v1.ObjectMeta{Name: name},
		Status: &v1.NodeStatus{Allocatable: map[string]string{"cpu": "4", "memory": "4Gi", "pods": "10"},
			Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}},
	}
}

func pod(name, nodeName, cpu string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Uid: "uid-" + name},
		Spec: &v1.PodSpec{NodeName: nodeName, Containers: []*v1.Container{{Name: "c",
			Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": cpu}}}}},
	}
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func snapshotCPU(t *testing.T, c *Cache, s *Snapshot, name string) int64 {
	t.Helper()
	c.UpdateSnapshot(s)
	ni := s.Get(name)
	if ni == nil {
		t.Fatalf("node %s not in snapshot", name)
	}
	return ni.Requested.MilliCPU
}

func TestAssumeConfirmForget(t *testing.T) {
	c := New(Config{})
	s := NewSnapshot()
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	a := framework.NewPodInfo(pod("a", "", "500m"))
	if err := c.AssumePod(a, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.AssumePod(a, "n2"); err == nil {
		t.Fatal("assumed the same pod twice")
	}
	if got := snapshotCPU(t, c, s, "n1"); got != 500 {
		t.Fatalf("n1 cpu after assume = %d, want 500", got)
	}
	// The informer reports the binding: confirmed, no longer assumed.
	c.AddPod(pod("a", "n1", "500m"))
	if c.IsAssumed("default/a") {
		t.Error("pod still assumed after the informer reported it")
	}
	if got := snapshotCPU(t, c, s, "n1"); got != 500 {
		t.Errorf("n1 cpu after confirm = %d, want 500 (counted once)", got)
	}
	// A failed bind rolls back.
	b := framework.NewPodInfo(pod("b", "", "1"))
	_ = c.AssumePod(b, "n2")
	if !c.ForgetPod("default/b") {
		t.Error("ForgetPod of an assumed pod reported false")
	}
	if c.ForgetPod("default/a") {
		t.Error("ForgetPod removed a confirmed pod")
	}
	if got := snapshotCPU(t, c, s, "n2"); got != 0 {
		t.Errorf("n2 cpu after forget = %d, want 0", got)
	}
	c.RemovePod("default/a")
	if got := snapshotCPU(t, c, s, "n1"); got != 0 {
		t.Errorf("n1 cpu after delete = %d, want 0", got)
	}
	if st := c.Stats(); st != (Stats{Nodes: 2}) {
		t.Errorf("stats %+v", st)
	}
}

func TestBindObservedOnOtherNodeMoves(t *testing.T) {
	c := New(Config{})
	c.AddNode(node("n1"))
	c.AddNode(node("n2"))
	_ = c.AssumePod(framework.NewPodInfo(pod("a", "", "1")), "n1")
	c.AddPod(pod("a", "n2", "1")) // another scheduler won the race
	s := NewSnapshot()
	if got := snapshotCPU(t, c, s, "n1"); got != 0 {
		t.Errorf("n1 cpu = %d, want 0", got)
	}
	if got := snapshotCPU(t, c, s, "n2"); got != 1000 {
		t.Errorf("n2 cpu = %d, want 1000", got)
	}
}

func TestExpire(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	c := New(Config{AssumedTTL: 10 * time.Second, Now: clk.now})
	c.AddNode(node("n1"))
	_ = c.AssumePod(framework.NewPodInfo(pod("a", "", "1")), "n1")
	_ = c.AssumePod(framework.NewPodInfo(pod("b", "", "1")), "n1")
	c.FinishBinding("default/a")
	clk.t = clk.t.Add(11 * time.Second)
	if n := c.Expire(); n != 1 {
		t.Fatalf("expired %d, want 1 (b is still binding)", n)
	}
	if c.IsAssumed("default/a") || !c.IsAssumed("default/b") {
		t.Error("wrong pod expired")
	}
}

func TestSnapshotCopiesOnlyChanges(t *testing.T) {
	c := New(Config{})
	for _, n := range []string{"c", "a", "b"} {
		c.AddNode(node(n))
	}
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	var names []string
	for _, ni := range s.Nodes() {
		names = append(names, ni.Name())
	}
	if len(names) != 3 || names[0] != "a" || names[2] != "c" {
		t.Fatalf("snapshot nodes %v, want a b c", names)
	}
	before := *s.Get("a")
	// Change only b: a's copy must not be rewritten.
	s.Get("a").NumPods = 99 // a marker a full copy would overwrite
	c.AddPod(pod("x", "b", "1"))
	c.UpdateSnapshot(s)
	if s.Get("a").NumPods != 99 {
		t.Error("unchanged node a was copied again")
	}
	if s.Get("b").NumPods != 1 {
		t.Error("changed node b not copied")
	}
	s.Get("a").NumPods = before.NumPods
	// Removing a node drops it from the candidates.
	c.RemoveNode("c")
	c.UpdateSnapshot(s)
	if len(s.Nodes()) != 2 || s.Get("c") != nil {
		t.Errorf("removed node still in snapshot: %d nodes", len(s.Nodes()))
	}
}

func TestPodsBeforeTheirNode(t *testing.T) {
	c := New(Config{})
	c.AddPod(pod("x", "late", "2"))
	s := NewSnapshot()
	c.UpdateSnapshot(s)
	if len(s.Nodes()) != 0 {
		t.Fatal("a node without a Node object is a candidate")
	}
	c.AddNode(node("late"))
	if got := snapshotCPU(t, c, s, "late"); got != 2000 {
		t.Errorf("late cpu = %d, want the earlier pod's 2000", got)
	}
	c.RemoveNode("late")
	c.RemovePod("default/x")
	if st := c.Stats(); st.Nodes != 0 || st.Pods != 0 || len(c.nodes) != 0 {
		t.Errorf("leftovers after node and pod removal: %+v, %d items", st, len(c.nodes))
	}
}
