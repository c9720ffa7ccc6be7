package replicaset_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/replicaset"
)

func newRS(name string, replicas int32) *v1.ReplicaSet {
	lbl := map[string]string{"app": name}
	return &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.ReplicaSetSpec{
			Replicas: proto.Int32(replicas),
			Selector: &v1.LabelSelector{MatchLabels: lbl},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec:     &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36"}}},
			},
		},
	}
}

// owned counts the active pods controlled by uid.
func owned(pods []*v1.Pod, uid string) int {
	n := 0
	for _, p := range pods {
		if ref := controller.ControllerRef(p.GetMetadata()); ref != nil && ref.Uid == uid && controller.IsPodActive(p) {
			n++
		}
	}
	return n
}

func waitStatus(t *testing.T, c *client.Client, name string, want int32) *v1.ReplicaSet {
	t.Helper()
	var rs *v1.ReplicaSet
	wait.Eventually(t, 20*time.Second, fmt.Sprintf("ReplicaSet %s with %d available replicas", name, want), func() error {
		var err error
		rs, err = client.For[*v1.ReplicaSet](c).Get(context.Background(), "default", name)
		if err != nil {
			return err
		}
		// The status may lag the pods (the controller's watch is slow):
		// check the pods themselves too.
		list, _, err := client.For[*v1.Pod](c).List(context.Background(), client.ListOptions{Namespace: "default"})
		if err != nil {
			return err
		}
		ready := 0
		for _, p := range list {
			if ref := controller.ControllerRef(p.Metadata); ref != nil && ref.Uid == rs.Metadata.Uid && controller.IsPodActive(p) && controller.IsPodReady(p) {
				ready++
			}
		}
		if n := owned(list, rs.Metadata.Uid); n != int(want) || ready != int(want) {
			return fmt.Errorf("%d active pods, %d ready", n, ready)
		}
		st := rs.GetStatus()
		if st.GetReplicas() == want && st.GetReadyReplicas() == want && st.GetAvailableReplicas() == want &&
			st.GetObservedGeneration() == rs.Metadata.Generation {
			return nil
		}
		return fmt.Errorf("status %v", st)
	})
	return rs
}

// TestHoldsReplicasWithDelayedWatch: the ReplicaSet keeps N pods while
// pods are deleted under it, and never has more than N even though its pod
// watch lags by 400ms (expectations hold it back until it sees its own
// creates and deletes).
func TestHoldsReplicasWithDelayedWatch(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 90*time.Second)
	d := controllertest.Deps(ctx, s.Client)
	pods := controllertest.NewDelayed(controller.For[*v1.Pod](d.Informers), 400*time.Millisecond)
	go pods.Run(ctx)
	rsc, err := replicaset.NewWithSources(d, replicaset.Config{}, controller.For[*v1.ReplicaSet](d.Informers), pods)
	if err != nil {
		t.Fatal(err)
	}
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"}})
	controllertest.RunAll(ctx, t, d.Informers, rsc)

	rsAPI := client.For[*v1.ReplicaSet](s.Client)
	podAPI := client.For[*v1.Pod](s.Client)
	rs, err := rsAPI.Create(ctx, newRS("web", 5))
	if err != nil {
		t.Fatal(err)
	}
	uid := rs.Metadata.Uid
	var mu sync.Mutex
	maxSeen := 0
	controllertest.ObservePods(ctx, t, s.Client, "default", func(all []*v1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		maxSeen = max(maxSeen, owned(all, uid))
	})
	waitStatus(t, s.Client, "web", 5)

	for round := range 3 {
		list, _, err := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		deleted := 0
		for _, p := range list {
			if controller.IsPodActive(p) && deleted < 2 {
				if _, err := podAPI.Delete(ctx, "default", p.Metadata.Name, client.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
				deleted++
			}
		}
		if deleted != 2 {
			t.Fatalf("round %d: found only %d active pods to delete", round, deleted)
		}
		waitStatus(t, s.Client, "web", 5)
	}
	mu.Lock()
	if maxSeen != 5 {
		t.Errorf("observed up to %d active pods of a ReplicaSet of 5", maxSeen)
	}
	mu.Unlock()

	// Scale up and down through the same lagging watch.
	scale := func(n int32) {
		if _, err := rsAPI.Mutate(ctx, "default", "web", false, func(rs *v1.ReplicaSet) error {
			rs.Spec.Replicas = proto.Int32(n)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	scale(9)
	waitStatus(t, s.Client, "web", 9)
	mu.Lock()
	maxSeen = 0
	mu.Unlock()
	scale(2)
	waitStatus(t, s.Client, "web", 2)
	list, _, _ := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
	if n := owned(list, uid); n != 2 {
		t.Errorf("after scaling to 2: %d active pods", n)
	}
	assertEvent(t, s.Client, "web", "SuccessfulCreate", "Created pod: web-")
	assertEvent(t, s.Client, "web", "SuccessfulDelete", "Deleted pod: web-")
}

func assertEvent(t *testing.T, c *client.Client, object, reason, prefix string) {
	t.Helper()
	wait.Eventually(t, 10*time.Second, "a "+reason+" event on "+object, func() error {
		evs, _, err := client.For[*v1.Event](c).List(context.Background(), client.ListOptions{Namespace: "default"})
		if err != nil {
			return err
		}
		var reasons []string
		for _, e := range evs {
			if e.InvolvedObject.GetName() == object && e.Reason == reason && strings.HasPrefix(e.Message, prefix) {
				return nil
			}
			reasons = append(reasons, e.Reason+": "+e.Message)
		}
		return fmt.Errorf("no %s event on %s; have %q", reason, object, reasons)
	})
}

// TestAdoptAndRelease: a matching orphan is adopted (and the surplus
// deleted), and a pod whose labels stop matching is released and replaced.
func TestAdoptAndRelease(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 60*time.Second)
	d := controllertest.Deps(ctx, s.Client)
	rsc, err := replicaset.New(d, replicaset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, rsc)
	podAPI := client.For[*v1.Pod](s.Client)
	rsAPI := client.For[*v1.ReplicaSet](s.Client)

	orphan := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "orphan", Namespace: "default", Labels: map[string]string{"app": "api"}},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	if _, err := podAPI.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	rs, err := rsAPI.Create(ctx, newRS("api", 3))
	if err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "the orphan pod adopted", func() error {
		p, err := podAPI.Get(ctx, "default", "orphan")
		if err != nil {
			return err
		}
		ref := controller.ControllerRef(p.Metadata)
		list, _, _ := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=api"})
		if ref != nil && ref.Uid == rs.Metadata.Uid && ref.Kind == "ReplicaSet" && owned(list, rs.Metadata.Uid) == 3 {
			return nil
		}
		return fmt.Errorf("orphan refs %v; %d owned pods", p.Metadata.OwnerReferences, owned(list, rs.Metadata.Uid))
	})

	// Relabel the adopted pod: it is released and replaced.
	if _, err := podAPI.Mutate(ctx, "default", "orphan", false, func(p *v1.Pod) error {
		p.Metadata.Labels = map[string]string{"app": "debug"}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 10*time.Second, "the pod released", func() error {
		p, _ := podAPI.Get(ctx, "default", "orphan")
		list, _, _ := podAPI.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=api"})
		if controller.ControllerRef(p.GetMetadata()) == nil && owned(list, rs.Metadata.Uid) == 3 {
			return nil
		}
		return fmt.Errorf("released pod refs %v; %d owned pods", p.GetMetadata().GetOwnerReferences(), owned(list, rs.Metadata.Uid))
	})
}

// TestFailedCreate: when creates fail the controller records FailedCreate,
// and converges once the apiserver is reachable again.
func TestFailedCreate(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 60*time.Second)
	d := controllertest.Deps(ctx, s.Client)
	proxy := controllertest.StartProxy(t, s.Addr())
	writes, err := client.New(client.Config{Server: proxy.Addr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { writes.Close() })
	wd := d
	wd.Client = writes // the controller writes through the proxy; its informers and events do not
	rsc, err := replicaset.NewWithSources(wd, replicaset.Config{},
		controller.For[*v1.ReplicaSet](d.Informers), controller.For[*v1.Pod](d.Informers))
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, rsc)
	proxy.SetDown(true)
	rsAPI := client.For[*v1.ReplicaSet](s.Client)
	if _, err := rsAPI.Create(ctx, newRS("down", 4)); err != nil {
		t.Fatal(err)
	}
	assertEvent(t, s.Client, "down", "FailedCreate", "Error creating:")
	proxy.SetDown(false)
	wait.Eventually(t, 20*time.Second, "ReplicaSet down recovered to 4 replicas", func() error {
		rs, err := rsAPI.Get(ctx, "default", "down")
		if err != nil {
			return err
		}
		if rs.GetStatus().GetReplicas() == 4 && controller.GetCondition(rs.Status.Conditions, "ReplicaFailure") == nil {
			return nil
		}
		return fmt.Errorf("status %v", rs.GetStatus())
	})
}
