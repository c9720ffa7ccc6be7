package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/scheduler/cache"
	"github.com/tugboat/tugboat/scheduler/framework"
	"github.com/tugboat/tugboat/scheduler/framework/plugins"
)

// decide is one decision as scheduleOne makes it: the cache's topology
// counts for pi, then the pipeline over the named nodes of the snapshot.
func decide(t *testing.T, c *cache.Cache, pod *v1.Pod, noms framework.Nominations, nodes ...string) (framework.Result, *framework.FitError) {
	t.Helper()
	filters, err := plugins.NewFilters(plugins.FilterNames())
	if err != nil {
		t.Fatal(err)
	}
	p := framework.NewPipeline(framework.PipelineConfig{Filters: filters, Seed: 1})
	snap := cache.NewSnapshot()
	c.UpdateSnapshot(snap)
	var list []*framework.NodeInfo
	for _, ni := range snap.Nodes() {
		for _, n := range nodes {
			if ni.Name() == n {
				list = append(list, ni)
			}
		}
	}
	pi := framework.NewPodInfo(pod)
	pi.Topology = c.Topology(pi, func(string) map[string]string { return nil })
	return p.Schedule(pi, list, noms)
}

// Pods nominated to a node count in the pod affinity and spread counts of
// a decision that filters that node when they are at least as important
// as the deciding pod (Kubernetes' RunFilterPluginsWithNominatedPods):
// the zone spread, the pod's own required anti-affinity, and a nominated
// pod's anti-affinity against the deciding pod (with no pod in the cache
// that has any affinity: the decision's counts start empty).
func TestNominatedPodsCountInTopology(t *testing.T) {
	c := cache.New(cache.Config{})
	c.AddNode(makeNode("a1", "4", "4Gi", label("zone", "a")))
	c.AddNode(makeNode("b1", "4", "4Gi", label("zone", "b")))
	spread := func(p *v1.Pod) {
		p.Spec.TopologySpreadConstraints = []*v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "DoNotSchedule",
			LabelSelector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	}
	prio := func(v int32) podOpt { return func(p *v1.Pod) { p.Spec.Priority = v } }
	nominated := framework.NewPodInfo(makePod("high", "100m", "64Mi", podLabels("app", "web"), prio(1000),
		requireAnti(term("kubernetes.io/hostname", map[string]string{"app": "api"}))))
	noms := framework.Nominations{"a1": {nominated}}

	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want string // "" fits a1
	}{
		{"spread, lower priority", makePod("web", "100m", "64Mi", podLabels("app", "web"), prio(500), spread),
			"0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints."},
		{"spread, equal priority", makePod("web", "100m", "64Mi", podLabels("app", "web"), prio(1000), spread),
			"0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints."},
		{"spread, higher priority", makePod("web", "100m", "64Mi", podLabels("app", "web"), prio(2000), spread), ""},
		{"own anti-affinity", makePod("solo", "100m", "64Mi", prio(500), requireAnti(term("kubernetes.io/hostname", map[string]string{"app": "web"}))),
			"0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."},
		{"nominated pod's anti-affinity", makePod("api", "100m", "64Mi", podLabels("app", "api"), prio(500)),
			"0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules."},
		{"nominated pod's anti-affinity, higher priority", makePod("api", "100m", "64Mi", podLabels("app", "api"), prio(2000)), ""},
	} {
		_, fe := decide(t, c, tc.pod, noms, "a1")
		switch {
		case tc.want == "" && fe != nil:
			t.Errorf("%s: %v, want a1", tc.name, fe)
		case tc.want != "" && (fe == nil || fe.Error() != tc.want):
			t.Errorf("%s: %v, want %q", tc.name, fe, tc.want)
		}
		// Without the nomination every one fits a1.
		if _, fe := decide(t, c, tc.pod, nil, "a1"); fe != nil {
			t.Errorf("%s without nominations: %v", tc.name, fe)
		}
	}
	// The spread pod goes to the other zone rather than next to the
	// nominated one.
	for range 5 {
		res, fe := decide(t, c, makePod("web", "100m", "64Mi", podLabels("app", "web"), prio(500), spread), noms, "a1", "b1")
		if fe != nil || res.Node.Name() != "b1" {
			t.Fatalf("spread pod: %v on %v, want b1", fe, res.Node)
		}
	}
}

// With a real apiserver: a pod nominated to a node after a preemption
// keeps the node from a less important pod whose required anti-affinity
// selects it (it stays Pending saying so), while its victim terminates;
// a more important one is not kept out.
func TestNominatedPodCountsForAntiAffinity(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	priorityClass(t, c, "low", 10, "")
	priorityClass(t, c, "medium", 500, "")
	priorityClass(t, c, "high", 1000, "")
	priorityClass(t, c, "urgent", 2000, "")
	createNode(t, c, makeNode("node-1", "1", "4Gi"))
	createPods(t, c, []*v1.Pod{makePod("victim", "900m", "64Mi", withPriority("low"), onNode("node-1"))})
	startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("high", "600m", "64Mi", withPriority("high"), podLabels("app", "web"))})
	wait.Eventually(t, 30*time.Second, "the high pod nominated to node-1, its victim terminating", func() error {
		if v := getPod(t, c, "victim"); v.Metadata.DeletionTimestamp == nil {
			return errors.New("victim not being deleted")
		}
		if got := getPod(t, c, "high").GetStatus().GetNominatedNodeName(); got != "node-1" {
			return fmt.Errorf("nominated %q", got)
		}
		return nil
	})
	// No cpu asked: only the anti-affinity can keep it off node-1.
	anti := requireAnti(term("kubernetes.io/hostname", map[string]string{"app": "web"}))
	createPods(t, c, []*v1.Pod{makePod("medium", "", "64Mi", withPriority("medium"), anti)})
	wait.Eventually(t, 20*time.Second, "the medium pod Pending for the nominated pod's labels", func() error {
		p := getPod(t, c, "medium")
		if p.Spec.NodeName != "" {
			return fmt.Errorf("bound to %s beside the pod nominated there", p.Spec.NodeName)
		}
		if msg := podScheduledCondition(p).GetMessage(); !strings.HasPrefix(msg, "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.") {
			return fmt.Errorf("message %q", msg)
		}
		return nil
	})
	createPods(t, c, []*v1.Pod{makePod("urgent", "", "64Mi", withPriority("urgent"), anti)})
	wait.Eventually(t, 20*time.Second, "the urgent pod bound to node-1", func() error {
		if n := getPod(t, c, "urgent").Spec.NodeName; n != "node-1" {
			return fmt.Errorf("on %q", n)
		}
		return nil
	})
	if p := getPod(t, c, "medium"); p.Spec.NodeName != "" {
		t.Errorf("medium bound to %s", p.Spec.NodeName)
	}
}
