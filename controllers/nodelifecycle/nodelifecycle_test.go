package nodelifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/nodelifecycle"
	"github.com/tugboat/tugboat/controllers/replicaset"
)

const (
	grace      = 2 * time.Second
	toleration = 2 * time.Second
)

type env struct {
	s       *apiservertest.Server
	ctx     context.Context
	cluster *controllertest.Cluster
	nodes   *client.Typed[*v1.Node]
	pods    *client.Typed[*v1.Pod]
}

func newEnv(t *testing.T, nodes ...string) *env {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 90*time.Second)
	cl := controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: nodes})
	return &env{s: s, ctx: ctx, cluster: cl, nodes: client.For[*v1.Node](s.Client), pods: client.For[*v1.Pod](s.Client)}
}

// controllerManager runs the ReplicaSet and node lifecycle controllers on
// fresh informers, as one controller-manager process would; cancel stops it.
func (e *env) controllerManager(t *testing.T) context.CancelFunc {
	ctx, cancel := context.WithCancel(e.ctx)
	d := controllertest.Deps(ctx, e.s.Client)
	rsc, err := replicaset.New(d, replicaset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	nlc, err := nodelifecycle.New(d, nodelifecycle.Config{GracePeriod: grace, MonitorPeriod: 500 * time.Millisecond, PodEvictionTimeout: toleration})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, rsc, nlc)
	return cancel
}

func (e *env) createRS(t *testing.T, name string, n int32) {
	lbl := map[string]string{"app": name}
	_, err := client.For[*v1.ReplicaSet](e.s.Client).Create(e.ctx, &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(n), Selector: &v1.LabelSelector{MatchLabels: lbl},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readyPods returns the ready, active pods of app by node.
func (e *env) readyPods(t *testing.T, app string) map[string][]string {
	list, _, err := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, p := range list {
		if controller.IsPodActive(p) && controller.IsPodReady(p) {
			out[p.Spec.NodeName] = append(out[p.Spec.NodeName], p.Metadata.Name)
		}
	}
	return out
}

func count(m map[string][]string) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// unreachable returns nil once the node is marked unreachable: Ready
// Unknown and the NoExecute unreachable taint.
func (e *env) unreachable(name string) error {
	n, err := e.nodes.Get(e.ctx, "", name)
	if err != nil {
		return err
	}
	r := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
	tainted := false
	for _, t := range n.GetSpec().GetTaints() {
		tainted = tainted || (t.Key == nodelifecycle.TaintUnreachable && t.Effect == "NoExecute" && t.TimeAdded != nil)
	}
	if r != nil && r.Status == "Unknown" && r.Reason == nodelifecycle.ReasonNodeStatusUnknown &&
		r.Message == nodelifecycle.MessageNodeStatusUnknown && tainted {
		return nil
	}
	return fmt.Errorf("node %s: ready %v taints %v", name, r, n.GetSpec().GetTaints())
}

// waitUntil blocks until the wall clock passes t (choosing a moment in a
// scenario, not synchronizing with anything).
func waitUntil(t time.Time) { time.Sleep(time.Until(t)) }

// testNodeFailure stops a node's kubelet and checks the timeline; with
// restartAt > 0 the controller-manager is replaced that long after.
func testNodeFailure(t *testing.T, restartAt time.Duration) {
	e := newEnv(t, "n1", "n2", "n3")
	stop := e.controllerManager(t)
	e.createRS(t, "web", 6)
	// A pod that tolerates unreachability for an hour stays.
	if _, err := e.pods.Create(e.ctx, &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "patient", Namespace: "default", Labels: map[string]string{"app": "patient"}},
		Spec: &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}},
			Tolerations: []*v1.Toleration{{Key: nodelifecycle.TaintUnreachable, Operator: "Exists", Effect: "NoExecute", TolerationSeconds: proto.Int64(3600)}}},
	}); err != nil {
		t.Fatal(err)
	}
	var before map[string][]string
	wait.Eventually(t, 20*time.Second, "6 ready web pods, some and the patient one on n1", func() error {
		before = e.readyPods(t, "web")
		if count(before) == 6 && len(before["n1"]) > 0 && len(e.readyPods(t, "patient")["n1"]) == 1 {
			return nil
		}
		return fmt.Errorf("ready pods %v", before)
	})

	t0 := time.Now()
	e.cluster.StopNode("n1")
	notReadyBy := t0.Add(grace + 1500*time.Millisecond)
	if restartAt > 0 {
		waitUntil(t0.Add(restartAt))
		stop()
		e.controllerManager(t)
		if restartAt < grace {
			// Not yet marked: the new controller-manager starts its own
			// grace period (renewals are timed by its clock only).
			notReadyBy = time.Now().Add(grace + 1500*time.Millisecond)
		}
	}
	wait.Eventually(t, time.Until(notReadyBy), "n1 marked unreachable", func() error { return e.unreachable("n1") })
	t.Logf("node unreachable after %s (grace %s)", time.Since(t0).Round(10*time.Millisecond), grace)
	wait.Eventually(t, 2*time.Second, "the pods on n1 marked not Ready", func() error {
		list, _, _ := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", FieldSelector: "spec.nodeName=n1"})
		for _, p := range list {
			if controller.IsPodReady(p) {
				return errors.New("pod " + p.Metadata.Name + " on the unreachable node still Ready")
			}
		}
		return nil
	})

	deadline := t0.Add(grace + toleration + 4*time.Second)
	wait.Eventually(t, time.Until(deadline), "web pods evicted from n1 and replaced", func() error {
		now := e.readyPods(t, "web")
		if count(now) == 6 && len(now["n1"]) == 0 {
			return nil
		}
		return fmt.Errorf("ready pods %v", now)
	})
	t.Logf("pods recreated elsewhere after %s (grace %s + toleration %s)", time.Since(t0).Round(10*time.Millisecond), grace, toleration)
	for _, name := range before["n1"] {
		if _, err := e.pods.Get(e.ctx, "default", name); err == nil {
			t.Errorf("evicted pod %s still exists", name)
		}
	}
	if _, err := e.pods.Get(e.ctx, "default", "patient"); err != nil {
		t.Errorf("pod tolerating the taint for an hour was evicted: %v", err)
	}

	// The kubelet comes back: the taint goes.
	e.cluster.StartNode("n1")
	wait.Eventually(t, 10*time.Second, "n1 Ready and untainted", func() error {
		n, _ := e.nodes.Get(e.ctx, "", "n1")
		r := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
		if len(n.GetSpec().GetTaints()) == 0 && r.GetStatus() == "True" {
			return nil
		}
		return fmt.Errorf("taints %v ready %v", n.GetSpec().GetTaints(), r)
	})
}

// TestNodeFailure: a node whose lease stops is unreachable within the
// grace period, its pods are NotReady at once and recreated elsewhere
// within grace + toleration + a few seconds; its taint goes when it returns.
func TestNodeFailure(t *testing.T) { testNodeFailure(t, 0) }

// TestNodeFailureWithRestart: the same with the controller-manager
// restarted in the middle: before the node is marked, and after it is
// marked but before its pods are evicted (the eviction clock is the
// taint's timeAdded, so it does not restart).
func TestNodeFailureWithRestart(t *testing.T) {
	t.Run("before marking", func(t *testing.T) { testNodeFailure(t, grace/2) })
	t.Run("before eviction", func(t *testing.T) { testNodeFailure(t, grace+toleration/2) })
}

// TestNoEvictionWhenAllNodesDown: when every node is unreachable the
// likelier fault is ours, so nothing is evicted; once a node returns,
// pods move to it.
func TestNoEvictionWhenAllNodesDown(t *testing.T) {
	e := newEnv(t, "n1", "n2")
	e.controllerManager(t)
	e.createRS(t, "web", 2)
	wait.Eventually(t, 20*time.Second, "2 ready web pods", func() error {
		r := e.readyPods(t, "web")
		if count(r) == 2 {
			return nil
		}
		return fmt.Errorf("ready %v", r)
	})
	e.cluster.StopNode("n1")
	e.cluster.StopNode("n2")
	wait.Eventually(t, 10*time.Second, "both nodes marked unreachable", func() error {
		return errors.Join(e.unreachable("n1"), e.unreachable("n2"))
	})
	// Well past the toleration, the pods are still there.
	waitUntil(time.Now().Add(toleration + time.Second))
	list, _, _ := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
	if len(list) != 2 {
		t.Fatalf("evicted during a full disruption: %d pods left", len(list))
	}
	e.cluster.StartNode("n2")
	wait.Eventually(t, 20*time.Second, "both web pods ready on n2", func() error {
		r := e.readyPods(t, "web")
		if len(r["n2"]) == 2 {
			return nil
		}
		return fmt.Errorf("ready %v", r)
	})
}
