package daemonset_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/daemonset"
	"github.com/tugboat/tugboat/scheduler"
)

type env struct {
	ctx   context.Context
	c     *client.Client
	cl    *controllertest.Cluster
	dss   *client.Typed[*v1.DaemonSet]
	pods  *client.Typed[*v1.Pod]
	nodes *client.Typed[*v1.Node]
}

// start runs an apiserver, fake kubelets on three nodes, the real
// scheduler (which binds the daemon pods through their node affinity) and
// the DaemonSet controller.
func start(t *testing.T) *env {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	dc, err := daemonset.New(d, daemonset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cl := controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2", "n3"}, NoScheduler: true, ReadyDelay: 100 * time.Millisecond})
	sched, err := scheduler.New(s.Client, scheduler.Config{Logger: controllertest.Logger(), Registry: prometheus.NewRegistry(),
		InitialBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, dc, sched)
	return &env{ctx: ctx, c: s.Client, cl: cl, dss: client.For[*v1.DaemonSet](s.Client), pods: client.For[*v1.Pod](s.Client), nodes: client.For[*v1.Node](s.Client)}
}

func newDaemonSet(name string) *v1.DaemonSet {
	lbl := map[string]string{"app": name}
	return &v1.DaemonSet{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"}, Spec: &v1.DaemonSetSpec{
		Selector: &v1.LabelSelector{MatchLabels: lbl},
		Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "agent", Image: "tugboat.local/busybox:latest"}}}},
	}}
}

// podsByNode is the running (not deleting) pods of app by node.
func (e *env) podsByNode(t *testing.T, app string) map[string][]*v1.Pod {
	t.Helper()
	list, _, err := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]*v1.Pod{}
	for _, p := range list {
		if p.Metadata.DeletionTimestamp == nil {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p)
		}
	}
	return out
}

// waitOnNodes waits until app runs exactly one ready pod on each of nodes
// and none elsewhere.
func (e *env) waitOnNodes(t *testing.T, app string, nodes ...string) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, fmt.Sprintf("one %s pod on each of %v", app, nodes), func() error {
		by := e.podsByNode(t, app)
		if len(by) != len(nodes) {
			return fmt.Errorf("pods on %d nodes: %v", len(by), keys(by))
		}
		for _, n := range nodes {
			if len(by[n]) != 1 || !controller.IsPodReady(by[n][0]) {
				return fmt.Errorf("node %s: %d pods (ready: %v)", n, len(by[n]), len(by[n]) == 1 && controller.IsPodReady(by[n][0]))
			}
		}
		ds, err := e.dss.Get(e.ctx, "default", app)
		if err != nil {
			return err
		}
		if st := ds.GetStatus(); st.GetDesiredNumberScheduled() != int32(len(nodes)) || st.GetNumberReady() != int32(len(nodes)) || st.GetNumberAvailable() != int32(len(nodes)) {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
}

func TestDaemonSet(t *testing.T) {
	e := start(t)
	if _, err := e.dss.Create(e.ctx, newDaemonSet("agent")); err != nil {
		t.Fatal(err)
	}
	e.waitOnNodes(t, "agent", "n1", "n2", "n3")

	// A node that joins gets its daemon pod.
	joined := time.Now()
	e.cl.AddNode(e.ctx, "n4")
	e.waitOnNodes(t, "agent", "n1", "n2", "n3", "n4")
	t.Logf("the 4th node ran its daemon pod %v after joining", time.Since(joined).Round(10*time.Millisecond))

	// A tainted node keeps no pod of a DaemonSet that does not tolerate the
	// taint (NoExecute: the pod that landed before the taint goes), and
	// runs one of a DaemonSet that does.
	e.cl.AddNode(e.ctx, "gpu")
	e.waitOnNodes(t, "agent", "n1", "n2", "n3", "n4", "gpu")
	if _, err := e.nodes.Mutate(e.ctx, "", "gpu", false, func(n *v1.Node) error {
		n.Spec = &v1.NodeSpec{Taints: []*v1.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoExecute"}}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tolerant := newDaemonSet("tolerant")
	tolerant.Spec.Template.Spec.Tolerations = []*v1.Toleration{{Key: "dedicated", Operator: "Equal", Value: "gpu", Effect: "NoExecute"}}
	if _, err := e.dss.Create(e.ctx, tolerant); err != nil {
		t.Fatal(err)
	}
	e.waitOnNodes(t, "tolerant", "n1", "n2", "n3", "n4", "gpu")
	e.waitOnNodes(t, "agent", "n1", "n2", "n3", "n4")

	// A rolling update (maxUnavailable 1) replaces the pods one node at a
	// time: at every change at least 3 of the 4 nodes have an available pod.
	var mu sync.Mutex
	fewest, armed := 4, false
	controllertest.ObservePods(e.ctx, t, e.c, "default", func(all []*v1.Pod) {
		nodes := map[string]bool{}
		for _, p := range all {
			if p.Metadata.Labels["app"] == "agent" && p.Metadata.DeletionTimestamp == nil && controller.IsPodReady(p) {
				nodes[p.Spec.NodeName] = true
			}
		}
		mu.Lock()
		if armed {
			fewest = min(fewest, len(nodes))
		}
		mu.Unlock()
	})
	mu.Lock()
	armed = true
	mu.Unlock()
	if _, err := e.dss.Mutate(e.ctx, "default", "agent", false, func(ds *v1.DaemonSet) error {
		ds.Spec.Template.Spec.Containers[0].Image = "tugboat.local/busybox:1.37"
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "the rollout to finish", func() error {
		ds, err := e.dss.Get(e.ctx, "default", "agent")
		if err != nil {
			return err
		}
		st := ds.GetStatus()
		if st.GetObservedGeneration() < ds.Metadata.Generation || st.GetUpdatedNumberScheduled() != 4 || st.GetNumberAvailable() != 4 {
			return fmt.Errorf("status %v", st)
		}
		for n, ps := range e.podsByNode(t, "agent") {
			if len(ps) != 1 || ps[0].Spec.Containers[0].Image != "tugboat.local/busybox:1.37" {
				return fmt.Errorf("node %s: %d pods", n, len(ps))
			}
		}
		return nil
	})
	mu.Lock()
	if fewest < 3 {
		t.Errorf("during the rolling update only %d of 4 nodes had an available pod (maxUnavailable 1)", fewest)
	}
	mu.Unlock()
	revs, _, err := client.For[*v1.ControllerRevision](e.c).List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: ""})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range revs {
		if ref := controller.ControllerRef(r.Metadata); ref != nil && ref.Name == "agent" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d revisions of agent, want 2", n)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
