package garbagecollector_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/deployment"
	"github.com/tugboat/tugboat/controllers/garbagecollector"
	"github.com/tugboat/tugboat/controllers/replicaset"
)

type env struct {
	s    *apiservertest.Server
	ctx  context.Context
	deps *client.Typed[*v1.Deployment]
	rss  *client.Typed[*v1.ReplicaSet]
	pods *client.Typed[*v1.Pod]
}

func newEnv(t *testing.T) *env {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 90*time.Second)
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"}})
	return &env{s: s, ctx: ctx, deps: client.For[*v1.Deployment](s.Client), rss: client.For[*v1.ReplicaSet](s.Client), pods: client.For[*v1.Pod](s.Client)}
}

// run starts the given controllers (by name) on a fresh informer factory.
func (e *env) run(t *testing.T, names ...string) context.CancelFunc {
	ctx, cancel := context.WithCancel(e.ctx)
	d := controllertest.Deps(ctx, e.s.Client)
	var runners []controller.Runner
	for _, n := range names {
		var r controller.Runner
		var err error
		switch n {
		case "replicaset":
			r, err = replicaset.New(d, replicaset.Config{})
		case "deployment":
			r, err = deployment.New(d, deployment.Config{})
		case "gc":
			r, err = garbagecollector.New(d, garbagecollector.Config{})
		}
		if err != nil {
			t.Fatal(err)
		}
		runners = append(runners, r)
	}
	controllertest.RunAll(ctx, t, d.Informers, runners...)
	return cancel
}

func newDeployment(name string, replicas int32) *v1.Deployment {
	lbl := map[string]string{"app": name}
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.DeploymentSpec{Replicas: proto.Int32(replicas), Selector: &v1.LabelSelector{MatchLabels: lbl},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}}}}},
	}
}

// counts returns the ReplicaSets and the active pods of app.
func (e *env) counts(t *testing.T, app string) (rsN, podN int, pods []*v1.Pod) {
	rss, _, err := e.rss.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if controller.IsPodActive(p) {
			pods = append(pods, p)
		}
	}
	return len(rss), len(pods), pods
}

func (e *env) createAndWait(t *testing.T, name string, replicas int) {
	t.Helper()
	if _, err := e.deps.Create(e.ctx, newDeployment(name, int32(replicas))); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "deployment "+name+" available", func() error {
		d, err := e.deps.Get(e.ctx, "default", name)
		if err == nil && d.GetStatus().GetAvailableReplicas() == int32(replicas) {
			return nil
		}
		return fmt.Errorf("status %v %v", d.GetStatus(), err)
	})
}

func (e *env) waitGone(t *testing.T, name string) {
	t.Helper()
	wait.Eventually(t, 20*time.Second, "deployment "+name+" gone", func() error {
		_, err := e.deps.Get(e.ctx, "default", name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deployment still there (%v)", err)
	})
}

// TestBackgroundDeletionLeavesNothing: deleting a Deployment deletes its
// ReplicaSet and their pods.
func TestBackgroundDeletionLeavesNothing(t *testing.T) {
	e := newEnv(t)
	e.run(t, "replicaset", "deployment", "gc")
	e.createAndWait(t, "web", 3)
	if _, err := e.deps.Delete(e.ctx, "default", "web", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the ReplicaSet and pods of web collected", func() error {
		all, _, _ := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
		rsN, _, _ := e.counts(t, "web")
		if rsN == 0 && len(all) == 0 {
			return nil
		}
		return fmt.Errorf("%d replica sets, %d pods left", rsN, len(all))
	})
}

// TestForegroundDeletion: the Deployment stays (deleting) until its
// ReplicaSets and pods are gone, then goes.
func TestForegroundDeletion(t *testing.T) {
	e := newEnv(t)
	e.run(t, "replicaset", "deployment", "gc")
	e.createAndWait(t, "fg", 3)
	if _, err := e.deps.Delete(e.ctx, "default", "fg", client.DeleteOptions{PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "deployment fg gone after its dependents", func() error {
		_, err := e.deps.Get(e.ctx, "default", "fg")
		if err == nil {
			return errors.New("deployment still there")
		}
		// Gone: its dependents must have gone first.
		all, _, _ := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=fg"})
		rsN, _, _ := e.counts(t, "fg")
		if rsN != 0 || len(all) != 0 {
			t.Fatalf("deployment deleted before its dependents: %d replica sets, %d pods left", rsN, len(all))
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.New(fmt.Sprint(err))
	})
}

// TestOrphanDeletionKeepsPods: orphaning a Deployment keeps its
// ReplicaSet and pods; orphaning that ReplicaSet keeps the pods.
func TestOrphanDeletionKeepsPods(t *testing.T) {
	e := newEnv(t)
	e.run(t, "replicaset", "deployment", "gc")
	e.createAndWait(t, "keep", 2)
	if _, err := e.deps.Delete(e.ctx, "default", "keep", client.DeleteOptions{PropagationPolicy: "Orphan"}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, "keep")
	rss, _, _ := e.rss.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=keep"})
	if len(rss) != 1 || len(rss[0].Metadata.OwnerReferences) != 0 {
		t.Fatalf("want one orphaned replica set, have %d: %v", len(rss), rss)
	}
	if _, n, _ := e.counts(t, "keep"); n != 2 {
		t.Fatalf("want 2 pods kept, have %d", n)
	}
	if _, err := e.rss.Delete(e.ctx, "default", rss[0].Metadata.Name, client.DeleteOptions{PropagationPolicy: "Orphan"}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the pods orphaned, the ReplicaSet gone", func() error {
		rsN, podN, pods := e.counts(t, "keep")
		for _, p := range pods {
			if len(p.Metadata.OwnerReferences) != 0 {
				return errors.New("pod still references its replica set")
			}
		}
		if rsN == 0 && podN == 2 {
			return nil
		}
		return fmt.Errorf("%d replica sets, %d pods", rsN, podN)
	})
	// Nothing deletes the orphans later: a canary whose owner never
	// existed, created after them, is collected while they stay.
	cms := client.For[*v1.ConfigMap](e.s.Client)
	if _, err := cms.Create(e.ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "canary", Namespace: "default",
		OwnerReferences: []*v1.OwnerReference{{ApiVersion: "apps/v1", Kind: "ReplicaSet", Name: "ghost", Uid: "no-such-uid"}}}}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "the canary collected", func() error {
		_, err := cms.Get(e.ctx, "default", "canary")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return errors.New("canary not collected")
	})
	if _, n, _ := e.counts(t, "keep"); n != 2 {
		t.Fatalf("orphaned pods were deleted: %d left", n)
	}
}

// TestDanglingFoundAfterRestart: dependents whose owner was deleted while
// no collector ran are found by the next collector's initial list.
func TestDanglingFoundAfterRestart(t *testing.T) {
	e := newEnv(t)
	stop := e.run(t, "replicaset")
	rs := &v1.ReplicaSet{
		Metadata: &v1.ObjectMeta{Name: "lost", Namespace: "default"},
		Spec: &v1.ReplicaSetSpec{Replicas: proto.Int32(3), Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "lost"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "lost"}},
				Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "nginx:1"}}}}},
	}
	if _, err := e.rss.Create(e.ctx, rs); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 20*time.Second, "3 pods of ReplicaSet lost", func() error {
		_, n, _ := e.counts(t, "lost")
		if n == 3 {
			return nil
		}
		return fmt.Errorf("%d pods", n)
	})
	stop() // the controller-manager goes away
	if _, err := e.rss.Delete(e.ctx, "default", "lost", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := e.counts(t, "lost"); n != 3 {
		t.Fatalf("pods went without a collector: %d", n)
	}
	e.run(t, "gc") // a new one starts
	wait.Eventually(t, 20*time.Second, "the dangling pods collected", func() error {
		all, _, _ := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=lost"})
		if len(all) == 0 {
			return nil
		}
		return fmt.Errorf("%d dangling pods left", len(all))
	})
}
