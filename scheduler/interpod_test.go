package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

const (
	hostnameKey = "kubernetes.io/hostname"
	zoneKey     = "topology.kubernetes.io/zone"
)

func podLabels(kv ...string) podOpt {
	return func(p *v1.Pod) {
		if p.Metadata.Labels == nil {
			p.Metadata.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Metadata.Labels[kv[i]] = kv[i+1]
		}
	}
}

func inNamespace(ns string) podOpt { return func(p *v1.Pod) { p.Metadata.Namespace = ns } }

func affinityOf(p *v1.Pod) *v1.Affinity {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &v1.Affinity{}
	}
	return p.Spec.Affinity
}

func term(key string, matchLabels map[string]string) *v1.PodAffinityTerm {
	return &v1.PodAffinityTerm{TopologyKey: key, LabelSelector: &v1.LabelSelector{MatchLabels: matchLabels}}
}

func requireAnti(t *v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinityOf(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &v1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	}
}

func requireAffinity(t *v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinityOf(p)
		if a.PodAffinity == nil {
			a.PodAffinity = &v1.PodAffinity{}
		}
		a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, t)
	}
}

func preferAnti(w int32, t *v1.PodAffinityTerm) podOpt {
	return func(p *v1.Pod) {
		a := affinityOf(p)
		if a.PodAntiAffinity == nil {
			a.PodAntiAffinity = &v1.PodAntiAffinity{}
		}
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			&v1.WeightedPodAffinityTerm{Weight: w, PodAffinityTerm: t})
	}
}

// waitSettled waits until every pod of namespace ns is bound or marked
// unschedulable.
func waitSettled(t *testing.T, c *client.Client, ns string) []*v1.Pod {
	t.Helper()
	var pods []*v1.Pod
	wait.Eventually(t, 30*time.Second, "every pod bound or unschedulable", func() error {
		var err error
		pods, _, err = client.For[*v1.Pod](c).List(context.Background(), client.ListOptions{Namespace: ns})
		if err != nil {
			return err
		}
		return settled(pods)
	})
	return pods
}

func podNamed(pods []*v1.Pod, name string) *v1.Pod {
	for _, p := range pods {
		if p.Metadata.Name == name {
			return p
		}
	}
	return nil
}

// TestAntiAffinitySpreadsReplicas: three replicas with required
// anti-affinity to their own label on kubernetes.io/hostname land on the
// three nodes, created all at once (so only the cache's assumed pods keep
// them apart); the fourth stays Pending and says why, in its PodScheduled
// condition and a FailedScheduling Event. Deleting a replica lets it in.
func TestAntiAffinitySpreadsReplicas(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	for i := 1; i <= 3; i++ {
		createNode(t, c, makeNode(fmt.Sprintf("node-%d", i), "4", "8Gi"))
	}
	var pods []*v1.Pod
	for i := 0; i < 4; i++ {
		pods = append(pods, makePod(fmt.Sprintf("web-%d", i), "100m", "64Mi", podLabels("app", "web"), requireAnti(term(hostnameKey, map[string]string{"app": "web"}))))
	}
	createPods(t, c, pods)
	startScheduler(t, srv, Config{})
	got := waitSettled(t, c, "default")
	used := map[string]string{}
	var pending *v1.Pod
	for _, p := range got {
		if p.Spec.NodeName == "" {
			if pending != nil {
				t.Fatalf("pods %s and %s both pending", pending.Metadata.Name, p.Metadata.Name)
			}
			pending = p
			continue
		}
		if other, ok := used[p.Spec.NodeName]; ok {
			t.Errorf("pods %s and %s both on %s despite anti-affinity", other, p.Metadata.Name, p.Spec.NodeName)
		}
		used[p.Spec.NodeName] = p.Metadata.Name
	}
	if len(used) != 3 || pending == nil {
		t.Fatalf("%d nodes used, pending %v; want 3 and one pending", len(used), pending != nil)
	}
	const want = "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."
	if cond := podScheduledCondition(pending); cond.GetReason() != "Unschedulable" || cond.GetMessage() != want {
		t.Errorf("pending pod's PodScheduled %v, want Unschedulable %q", cond, want)
	}
	wait.Eventually(t, 20*time.Second, "a FailedScheduling event with the reason", func() error {
		for _, e := range events(t, c, pending.Metadata.Name, "FailedScheduling") {
			if e.Message == want {
				return nil
			}
		}
		return errors.New("no FailedScheduling event with the message")
	})
	// A replica deleted frees its node (PodRemoved retries the pending one).
	// No kubelet here: delete at once (a terminating pod still counts).
	victim := used["node-2"]
	if _, err := client.For[*v1.Pod](c).Delete(context.Background(), "default", victim, client.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the pending replica placed on the freed node", func() error {
		if n := getPod(t, c, pending.Metadata.Name).Spec.NodeName; n != "node-2" {
			return fmt.Errorf("on %q", n)
		}
		return nil
	})
}

// TestExistingPodsAntiAffinityIsSymmetric: a pod without any affinity
// keeps off the node of a pod whose required anti-affinity selects it.
func TestExistingPodsAntiAffinityIsSymmetric(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	createNode(t, c, makeNode("node-1", "4", "8Gi"))
	createNode(t, c, makeNode("node-2", "4", "8Gi"))
	startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("quiet", "100m", "64Mi", podLabels("app", "quiet"), requireAnti(term(hostnameKey, map[string]string{"app": "noisy"})))})
	quietNode := ""
	wait.Eventually(t, 20*time.Second, "the quiet pod bound", func() error {
		if quietNode = getPod(t, c, "quiet").Spec.NodeName; quietNode == "" {
			return errors.New("unbound")
		}
		return nil
	})
	var noisy []*v1.Pod
	for i := 0; i < 4; i++ {
		noisy = append(noisy, makePod(fmt.Sprintf("noisy-%d", i), "100m", "64Mi", podLabels("app", "noisy")))
	}
	createPods(t, c, noisy)
	for _, p := range waitSettled(t, c, "default") {
		if p.Metadata.Labels["app"] == "noisy" && (p.Spec.NodeName == quietNode || p.Spec.NodeName == "") {
			t.Errorf("pod %s on %q, the quiet pod's node is %s", p.Metadata.Name, p.Spec.NodeName, quietNode)
		}
	}
	// With the other node cordoned, a noisy pod has nowhere to go.
	if _, err := client.For[*v1.Node](c).Mutate(context.Background(), "", otherNode(quietNode), false, func(n *v1.Node) error {
		n.Spec.Unschedulable = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	createPods(t, c, []*v1.Pod{makePod("noisy-late", "100m", "64Mi", podLabels("app", "noisy"))})
	const want = "0/2 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules, 1 node(s) were unschedulable. preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
	wait.Eventually(t, 20*time.Second, "the late noisy pod unschedulable with the reason", func() error {
		if got := podScheduledCondition(getPod(t, c, "noisy-late")).GetMessage(); got != want {
			return fmt.Errorf("condition %q, want %q", got, want)
		}
		return nil
	})
}

func otherNode(n string) string {
	if n == "node-1" {
		return "node-2"
	}
	return "node-1"
}

// TestRequiredAffinityColocates: pods requiring affinity to a database pod
// on the zone key land in its zone; a group with affinity to itself starts
// anywhere and then stays in its first pod's zone; affinity across
// namespaces through namespaceSelector; a pod whose affinity selects no
// pod stays Pending with the reason.
func TestRequiredAffinityColocates(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	for _, z := range []string{"a", "b", "c"} {
		for i := 1; i <= 2; i++ {
			createNode(t, c, makeNode(fmt.Sprintf("%s-%d", z, i), "4", "8Gi", label(zoneKey, z)))
		}
	}
	if _, err := client.For[*v1.Namespace](c).Create(context.Background(), &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "prod", Labels: map[string]string{"env": "prod"}}}); err != nil {
		t.Fatal(err)
	}
	startScheduler(t, srv, Config{})
	createPods(t, c, []*v1.Pod{makePod("db", "100m", "64Mi", podLabels("app", "db"), nodeSelector(zoneKey, "b"))})
	wait.Eventually(t, 20*time.Second, "the db pod bound", func() error {
		if getPod(t, c, "db").Spec.NodeName == "" {
			return errors.New("unbound")
		}
		return nil
	})
	var pods []*v1.Pod
	for i := 0; i < 4; i++ {
		pods = append(pods, makePod(fmt.Sprintf("cache-%d", i), "100m", "64Mi", podLabels("app", "cache"), requireAffinity(term(zoneKey, map[string]string{"app": "db"}))))
		pods = append(pods, makePod(fmt.Sprintf("group-%d", i), "100m", "64Mi", podLabels("app", "group"), requireAffinity(term(zoneKey, map[string]string{"app": "group"}))))
	}
	pods = append(pods, makePod("orphan", "100m", "64Mi", requireAffinity(term(zoneKey, map[string]string{"app": "missing"}))))
	createPods(t, c, pods)
	// From namespace prod: affinity to default's pods by namespaces, and
	// by a namespaceSelector matching default's labels.
	if _, err := client.For[*v1.Namespace](c).Mutate(context.Background(), "", "default", false, func(ns *v1.Namespace) error {
		if ns.Metadata.Labels == nil {
			ns.Metadata.Labels = map[string]string{}
		}
		ns.Metadata.Labels["team"] = "core"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	crossNS := term(zoneKey, map[string]string{"app": "db"})
	crossNS.Namespaces = []string{"default"}
	bySelector := term(zoneKey, map[string]string{"app": "cache"})
	bySelector.NamespaceSelector = &v1.LabelSelector{MatchLabels: map[string]string{"team": "core"}}
	createPods(t, c, []*v1.Pod{
		makePod("api", "100m", "64Mi", inNamespace("prod"), requireAffinity(crossNS)),
		makePod("api-by-selector", "100m", "64Mi", inNamespace("prod"), requireAffinity(bySelector)),
	})
	got := waitSettled(t, c, "default")
	zoneOf := func(node string) string {
		if node == "" {
			return ""
		}
		return node[:1]
	}
	groupZone := zoneOf(podNamed(got, "group-0").Spec.NodeName)
	for _, p := range got {
		z := zoneOf(p.Spec.NodeName)
		switch p.Metadata.Labels["app"] {
		case "cache":
			if z != "b" {
				t.Errorf("pod %s in zone %q, want the db's zone b", p.Metadata.Name, z)
			}
		case "group":
			if z == "" || z != groupZone {
				t.Errorf("pod %s in zone %q, its group in %q", p.Metadata.Name, z, groupZone)
			}
		}
	}
	orphan := podNamed(got, "orphan")
	const want = "0/6 nodes are available: 6 node(s) didn't match pod affinity rules. preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."
	if orphan.Spec.NodeName != "" || podScheduledCondition(orphan).GetMessage() != want {
		t.Errorf("orphan on %q with %v, want Pending with %q", orphan.Spec.NodeName, podScheduledCondition(orphan), want)
	}
	for _, p := range waitSettled(t, c, "prod") {
		if z := zoneOf(p.Spec.NodeName); z != "b" {
			t.Errorf("pod prod/%s in zone %q, want b (its affinity selects default's pods there)", p.Metadata.Name, z)
		}
	}
}

// TestPreferredAntiAffinitySpreads: replicas preferring not to share a
// node spread over all of them while they can, then still get placed.
func TestPreferredAntiAffinitySpreads(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	for i := 1; i <= 3; i++ {
		createNode(t, c, makeNode(fmt.Sprintf("node-%d", i), "4", "8Gi"))
	}
	var pods []*v1.Pod
	for i := 0; i < 6; i++ {
		pods = append(pods, makePod(fmt.Sprintf("web-%d", i), "100m", "64Mi", podLabels("app", "web"), preferAnti(100, term(hostnameKey, map[string]string{"app": "web"}))))
	}
	createPods(t, c, pods)
	startScheduler(t, srv, Config{})
	per := map[string]int{}
	for _, p := range waitSettled(t, c, "default") {
		per[p.Spec.NodeName]++
	}
	if len(per) != 3 || per["node-1"] != 2 || per["node-2"] != 2 || per["node-3"] != 2 {
		t.Errorf("pods per node %v, want 2 on each of the 3 nodes", per)
	}
}
