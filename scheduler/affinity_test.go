package scheduler

import (
	"fmt"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func preferNode(weight int32, key string, values ...string) podOpt {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
		}
		na := p.Spec.Affinity.NodeAffinity
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution, &v1.PreferredSchedulingTerm{
			Weight: weight, Preference: &v1.NodeSelectorTerm{MatchExpressions: []*v1.LabelSelectorRequirement{{Key: key, Operator: "In", Values: values}}},
		})
	}
}

// nodesOf maps each bound pod whose name has prefix to its node.
func nodesOf(t *testing.T, pods []*v1.Pod, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range pods {
		if len(p.Metadata.Name) >= len(prefix) && p.Metadata.Name[:len(prefix)] == prefix {
			out[p.Metadata.Name] = p.Spec.NodeName
		}
	}
	return out
}

// TestPreferredNodeAffinity: pods preferring a zone go there while it has
// room, the heavier preference wins over the lighter, and a preference no
// node matches does not keep a pod from being placed.
func TestPreferredNodeAffinity(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("a-1", "4", "8Gi", label("topology.kubernetes.io/zone", "a")))
	createNode(t, c, makeNode("a-2", "4", "8Gi", label("topology.kubernetes.io/zone", "a")))
	createNode(t, c, makeNode("b-1", "4", "8Gi", label("topology.kubernetes.io/zone", "b"), label("disk", "ssd")))
	var pods []*v1.Pod
	for i := 0; i < 5; i++ {
		pods = append(pods, makePod(fmt.Sprintf("zone-b-%d", i), "100m", "64Mi", preferNode(50, "topology.kubernetes.io/zone", "b")))
		// zone a (weight 80) beats ssd (weight 20), which only b-1 has.
		pods = append(pods, makePod(fmt.Sprintf("heavier-%d", i), "100m", "64Mi", preferNode(20, "disk", "ssd"), preferNode(80, "topology.kubernetes.io/zone", "a")))
	}
	pods = append(pods, makePod("nowhere", "100m", "64Mi", preferNode(100, "topology.kubernetes.io/zone", "mars")))
	createPods(t, c, pods)
	startScheduler(t, srv, Config{})
	wait.Eventually(t, 30*time.Second, "every pod bound", func() error {
		for _, p := range listPods(t, c) {
			if p.Spec.NodeName == "" {
				return fmt.Errorf("pod %s unbound", p.Metadata.Name)
			}
		}
		return nil
	})
	all := listPods(t, c)
	for name, node := range nodesOf(t, all, "zone-b-") {
		if node != "b-1" {
			t.Errorf("pod %s preferring zone b on %s", name, node)
		}
	}
	for name, node := range nodesOf(t, all, "heavier-") {
		if node != "a-1" && node != "a-2" {
			t.Errorf("pod %s preferring zone a (80) over ssd (20) on %s", name, node)
		}
	}
}
