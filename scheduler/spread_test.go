package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func spread(maxSkew int32, key, when string, matchLabels map[string]string, opts ...func(*v1.TopologySpreadConstraint)) podOpt {
	return func(p *v1.Pod) {
		c := &v1.TopologySpreadConstraint{MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when, LabelSelector: &v1.LabelSelector{MatchLabels: matchLabels}}
		for _, o := range opts {
			o(c)
		}
		p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, c)
	}
}

func setCordon(t *testing.T, c *client.Client, node string, on bool) {
	t.Helper()
	if _, err := client.For[*v1.Node](c).Mutate(context.Background(), "", node, false, func(n *v1.Node) error {
		n.Spec.Unschedulable = on
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func perZone(pods []*v1.Pod, app string) map[string]int {
	out := map[string]int{}
	for _, p := range pods {
		if p.Metadata.Labels["app"] == app && p.Spec.NodeName != "" {
			out[p.Spec.NodeName[:1]]++
		}
	}
	return out
}

// TestTopologySpreadDoNotSchedule: maxSkew 1 over two zones places four
// pods 2+2, created at once. With zone b cordoned (still a domain: the
// default nodeTaintsPolicy Ignore counts it), a fifth pod may go to zone a
// (3 against 2: skew 1) but a sixth may not (4 against 2), and says so;
// uncordoned, the sixth goes to b.
func TestTopologySpreadDoNotSchedule(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("a-1", "8", "16Gi", label(zoneKey, "a")))
	createNode(t, c, makeNode("b-1", "8", "16Gi", label(zoneKey, "b")))
	createNode(t, c, makeNode("nolabel", "8", "16Gi"))
	sp := spread(1, zoneKey, "DoNotSchedule", map[string]string{"app": "web"})
	var pods []*v1.Pod
	for i := 0; i < 4; i++ {
		pods = append(pods, makePod(fmt.Sprintf("web-%d", i), "100m", "64Mi", podLabels("app", "web"), sp))
	}
	createPods(t, c, pods)
	startScheduler(t, srv, Config{})
	got := waitSettled(t, c, "default")
	if z := perZone(got, "web"); z["a"] != 2 || z["b"] != 2 || len(z) != 2 {
		t.Fatalf("pods per zone %v, want 2 in a and 2 in b", z)
	}
	setCordon(t, c, "b-1", true)
	createPods(t, c, []*v1.Pod{makePod("web-4", "100m", "64Mi", podLabels("app", "web"), sp)})
	wait.Eventually(t, 20*time.Second, "the fifth pod in zone a", func() error {
		if n := getPod(t, c, "web-4").Spec.NodeName; n != "a-1" {
			return fmt.Errorf("on %q", n)
		}
		return nil
	})
	createPods(t, c, []*v1.Pod{makePod("web-5", "100m", "64Mi", podLabels("app", "web"), sp)})
	const want = "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, 1 node(s) didn't match pod topology spread constraints (missing required label), 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 2 Preemption is not helpful for scheduling, 1 No preemption victims found for incoming pod."
	wait.Eventually(t, 20*time.Second, "the sixth pod refused with the reason", func() error {
		p := getPod(t, c, "web-5")
		if got := podScheduledCondition(p).GetMessage(); p.Spec.NodeName != "" || got != want {
			return fmt.Errorf("on %q, condition %q, want %q", p.Spec.NodeName, got, want)
		}
		return nil
	})
	setCordon(t, c, "b-1", false)
	wait.Eventually(t, 20*time.Second, "the sixth pod in zone b once uncordoned", func() error {
		if n := getPod(t, c, "web-5").Spec.NodeName; n != "b-1" {
			return fmt.Errorf("on %q", n)
		}
		return nil
	})
}

// TestTopologySpreadPolicies: with nodeAffinityPolicy Ignore, zone b
// counts for pods that may only go to zone a, so they stop at maxSkew;
// with the default Honor it does not, and they all go to a. With
// ScheduleAnyway the pods spread evenly without a refusal, even where one
// zone has more nodes.
func TestTopologySpreadPolicies(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("a-1", "8", "16Gi", label(zoneKey, "a")))
	createNode(t, c, makeNode("a-2", "8", "16Gi", label(zoneKey, "a")))
	createNode(t, c, makeNode("b-1", "8", "16Gi", label(zoneKey, "b")))
	ignore := "Ignore"
	var pods []*v1.Pod
	for i := 0; i < 3; i++ {
		pods = append(pods,
			makePod(fmt.Sprintf("ignore-%d", i), "100m", "64Mi", podLabels("app", "ignore"), nodeSelector(zoneKey, "a"),
				spread(1, zoneKey, "DoNotSchedule", map[string]string{"app": "ignore"}, func(c *v1.TopologySpreadConstraint) { c.NodeAffinityPolicy = &ignore })),
			makePod(fmt.Sprintf("honor-%d", i), "100m", "64Mi", podLabels("app", "honor"), nodeSelector(zoneKey, "a"),
				spread(1, zoneKey, "DoNotSchedule", map[string]string{"app": "honor"})))
	}
	for i := 0; i < 6; i++ {
		pods = append(pods, makePod(fmt.Sprintf("soft-%d", i), "100m", "64Mi", podLabels("app", "soft"), spread(1, zoneKey, "ScheduleAnyway", map[string]string{"app": "soft"})))
	}
	createPods(t, c, pods)
	startScheduler(t, srv, Config{})
	got := waitSettled(t, c, "default")
	if z := perZone(got, "ignore"); z["a"] != 1 {
		t.Errorf("nodeAffinityPolicy Ignore: %v in zone a, want 1 (zone b, empty, counts)", z)
	}
	if z := perZone(got, "honor"); z["a"] != 3 {
		t.Errorf("nodeAffinityPolicy Honor: %v, want 3 in zone a", z)
	}
	if z := perZone(got, "soft"); z["a"] != 3 || z["b"] != 3 {
		t.Errorf("ScheduleAnyway: %v per zone, want 3 and 3", z)
	}
	const want = "0/3 nodes are available: 2 node(s) didn't match pod topology spread constraints, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 2 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
	for _, p := range got {
		if p.Metadata.Labels["app"] == "ignore" && p.Spec.NodeName == "" {
			if msg := podScheduledCondition(p).GetMessage(); msg != want {
				t.Errorf("pod %s: %q, want %q", p.Metadata.Name, msg, want)
			}
		}
	}
}
