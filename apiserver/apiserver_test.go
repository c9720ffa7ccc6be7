package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newPod(name string, lbl map[string]string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Labels: lbl},
		Spec:     &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func TestCreateGetAlreadyExists(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	p, err := pods.Create(ctx, newPod("web", nil))
	if err != nil {
		t.Fatal(err)
	}
	if p.Metadata.Namespace != "default" || p.Metadata.Uid == "" || p.Metadata.ResourceVersion == 0 || p.Metadata.Generation != 1 {
		t.Fatalf("server fields not set: %v", p.Metadata)
	}
	if p.Status.GetPhase() != "Pending" || p.Spec.RestartPolicy != "Always" || p.Spec.Containers[0].ImagePullPolicy != "IfNotPresent" {
		t.Fatalf("defaults not applied: %v", p)
	}
	_, err = pods.Create(ctx, newPod("web", nil))
	if !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create: want AlreadyExists, got %v", err)
	}
	got, err := pods.Get(ctx, "default", "web")
	if err != nil || !proto.Equal(got, p) {
		t.Fatalf("get: %v %v", err, got)
	}
	if _, err := pods.Get(ctx, "default", "nope"); !apierrors.IsNotFound(err) {
		t.Fatalf("want NotFound, got %v", err)
	}
}

func TestValidationNamesFieldAndStoresNothing(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	bad := newPod("bad", nil)
	bad.Spec.Containers[0].Image = ""
	bad.Spec.Containers = append(bad.Spec.Containers, &v1.Container{Name: "Bad_Name", Image: "x", Resources: &v1.ResourceRequirements{Limits: map[string]string{"memory": "12Zi"}}})
	_, err := pods.Create(ctx, bad)
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want Invalid, got %v", err)
	}
	for _, want := range []string{"spec.containers[0].image: required", "spec.containers[1].name", "spec.containers[1].resources.limits.memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if _, err := pods.Get(ctx, "default", "bad"); !apierrors.IsNotFound(err) {
		t.Fatalf("invalid pod was stored: %v", err)
	}
	// Namespace must exist.
	p := newPod("x", nil)
	p.Metadata.Namespace = "missing"
	if _, err := pods.Create(ctx, p); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "namespace") {
		t.Fatalf("want namespace NotFound, got %v", err)
	}
	// Objects over the size limit are refused.
	big := newPod("big", nil)
	big.Metadata.Annotations = map[string]string{"a": strings.Repeat("x", 2<<20)}
	if _, err := pods.Create(ctx, big); err == nil {
		t.Fatal("want an error for a 2 MiB object")
	}
}

func TestUpdateConflictAndGeneration(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	deps := client.For[*v1.Deployment](s.Client)
	d := &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "web"},
		Spec: &v1.DeploymentSpec{
			Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: newPod("", nil).Spec},
		},
	}
	d, err := deps.Create(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	stale := proto.Clone(d).(*v1.Deployment)
	d.Spec.Replicas = proto.Int32(3)
	d2, err := deps.Update(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if d2.Metadata.Generation != 2 {
		t.Fatalf("generation %d, want 2", d2.Metadata.Generation)
	}
	stale.Spec.Replicas = proto.Int32(5)
	if _, err := deps.Update(ctx, stale); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: want Conflict, got %v", err)
	}
	// Label change: no generation bump. Status in Update is ignored.
	d2.Metadata.Labels = map[string]string{"x": "y"}
	d2.Status = &v1.DeploymentStatus{Replicas: 99}
	d3, err := deps.Update(ctx, d2)
	if err != nil {
		t.Fatal(err)
	}
	if d3.Metadata.Generation != 2 || d3.Status.GetReplicas() != 0 {
		t.Fatalf("generation %d status %v", d3.Metadata.Generation, d3.Status)
	}
	// UpdateStatus ignores spec.
	d3.Status = &v1.DeploymentStatus{Replicas: 3}
	d3.Spec.Replicas = proto.Int32(10)
	d4, err := deps.UpdateStatus(ctx, d3)
	if err != nil {
		t.Fatal(err)
	}
	if d4.Status.Replicas != 3 || *d4.Spec.Replicas != 3 {
		t.Fatalf("status update: %v %v", d4.Status, d4.Spec.Replicas)
	}
	// Delete with a stale precondition conflicts.
	if _, err := deps.Delete(ctx, "default", "web", client.DeleteOptions{ResourceVersion: d.Metadata.ResourceVersion}); !apierrors.IsConflict(err) {
		t.Fatalf("stale delete: want Conflict, got %v", err)
	}
	if _, err := deps.Delete(ctx, "default", "web", client.DeleteOptions{ResourceVersion: d4.Metadata.ResourceVersion}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentUpdatesNeverLost(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	cms := client.For[*v1.ConfigMap](s.Client)
	if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "counter"}}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := cms.Mutate(ctx, "default", "counter", false, func(c *v1.ConfigMap) error {
				if c.Data == nil {
					c.Data = map[string]string{}
				}
				c.Data[fmt.Sprint("k", i)] = "v"
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	c, _ := cms.Get(ctx, "default", "counter")
	if len(c.Data) != 10 {
		t.Fatalf("lost updates: %v", c.Data)
	}
}

func TestListSelectorsAndPaging(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	for i := 0; i < 25; i++ {
		tier := "front"
		if i%2 == 1 {
			tier = "back"
		}
		if _, err := pods.Create(ctx, newPod(fmt.Sprintf("p%02d", i), map[string]string{"app": "web", "tier": tier})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client.Bind(ctx, "default", "p00", "n1", 0); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		label, field string
		want         int
	}{
		{"", "", 25},
		{"tier=front", "", 13},
		{"tier!=front", "", 12},
		{"tier in (front,back)", "", 25},
		{"app=web,tier=back", "", 12},
		{"", "spec.nodeName=n1", 1},
		{"", "spec.nodeName!=n1", 24},
		{"tier=front", "metadata.name=p02", 1},
		{"", "status.phase=Pending", 25},
	}
	for _, c := range cases {
		items, rv, err := pods.List(ctx, client.ListOptions{LabelSelector: c.label, FieldSelector: c.field, Limit: 4})
		if err != nil {
			t.Fatalf("%q %q: %v", c.label, c.field, err)
		}
		if len(items) != c.want || rv == 0 {
			t.Errorf("%q %q: %d items (rv %d), want %d", c.label, c.field, len(items), rv, c.want)
		}
	}
	// One raw page has a continue token.
	resp, err := s.Client.Objects().List(ctx, &v1.ListRequest{Kind: "pods", Limit: 10})
	if err != nil || len(resp.Items) != 10 || resp.Continue == "" {
		t.Fatalf("paging: %v items=%d continue=%q", err, len(resp.Items), resp.Continue)
	}
	for _, bad := range []struct{ label, field, want string }{{"a in", "", "labelSelector"}, {"", "spec.nope=1", "fieldSelector"}} {
		_, _, err := pods.List(ctx, client.ListOptions{LabelSelector: bad.label, FieldSelector: bad.field})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("want Invalid naming %s, got %v", bad.want, err)
		}
	}
}

func TestBindOnce(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	if _, err := pods.Create(ctx, newPod("p", nil)); err != nil {
		t.Fatal(err)
	}
	p, err := s.Client.Bind(ctx, "default", "p", "n1", 0)
	if err != nil || p.Spec.NodeName != "n1" {
		t.Fatalf("bind: %v %v", err, p)
	}
	if _, err := s.Client.Bind(ctx, "default", "p", "n2", 0); !apierrors.IsConflict(err) {
		t.Fatalf("second bind: want Conflict, got %v", err)
	}
}

func TestGracefulPodDeletion(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	for _, n := range []string{"unbound", "bound"} {
		if _, err := pods.Create(ctx, newPod(n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Client.Bind(ctx, "default", "bound", "n1", 0); err != nil {
		t.Fatal(err)
	}
	// Unbound: gone at once.
	if _, err := pods.Delete(ctx, "default", "unbound", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "unbound"); !apierrors.IsNotFound(err) {
		t.Fatalf("unbound pod still there: %v", err)
	}
	// Bound: marked, stays until the kubelet deletes with grace 0.
	p, err := pods.Delete(ctx, "default", "bound", client.DeleteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Metadata.DeletionTimestamp == nil || p.Metadata.DeletionGracePeriodSeconds != 30 {
		t.Fatalf("want deletionTimestamp and grace 30, got %v", p.Metadata)
	}
	if _, err := pods.Get(ctx, "default", "bound"); err != nil {
		t.Fatalf("bound pod went at once: %v", err)
	}
	if _, err := pods.Delete(ctx, "default", "bound", client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctx, "default", "bound"); !apierrors.IsNotFound(err) {
		t.Fatalf("pod still there after grace 0: %v", err)
	}
}

func TestFinalizers(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	cms := client.For[*v1.ConfigMap](s.Client)
	c, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "f", Finalizers: []string{"example.com/hold"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err = cms.Delete(ctx, "default", "f", client.DeleteOptions{})
	if err != nil || c.Metadata.DeletionTimestamp == nil {
		t.Fatalf("want a pending delete: %v %v", err, c)
	}
	c.Metadata.Finalizers = nil
	if _, err := cms.Update(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "default", "f"); !apierrors.IsNotFound(err) {
		t.Fatalf("object should be gone once finalizers are empty: %v", err)
	}
}

func TestNamespaceDeletionDeletesContents(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	nss := client.For[*v1.Namespace](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	cms := client.For[*v1.ConfigMap](s.Client)
	if _, err := nss.Create(ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "team"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		p := newPod(fmt.Sprint("p", i), nil)
		p.Metadata.Namespace = "team"
		if _, err := pods.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cms.Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "c", Namespace: "team"}}); err != nil {
		t.Fatal(err)
	}
	ns, err := nss.Delete(ctx, "", "team", client.DeleteOptions{})
	if err != nil || ns.Status.Phase != "Terminating" {
		t.Fatalf("delete namespace: %v %v", err, ns)
	}
	p := newPod("late", nil)
	p.Metadata.Namespace = "team"
	if _, err := pods.Create(ctx, p); err == nil {
		t.Fatal("create in a terminating namespace succeeded")
	}
	wait.Eventually(t, 20*time.Second, "namespace team gone", func() error {
		if _, err := nss.Get(ctx, "", "team"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get namespace team: %v", err)
		}
		return nil
	})
	items, _, _ := pods.List(ctx, client.ListOptions{Namespace: "team"})
	cmItems, _, _ := cms.List(ctx, client.ListOptions{Namespace: "team"})
	if len(items)+len(cmItems) != 0 {
		t.Fatalf("namespace contents left: %d pods %d configmaps", len(items), len(cmItems))
	}
	if _, err := nss.Delete(ctx, "", "default", client.DeleteOptions{}); !errors.Is(err, apierrors.ErrForbidden) {
		t.Fatalf("deleting default: want Forbidden, got %v", err)
	}
}

func TestDataSurvivesRestart(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	pods := client.For[*v1.Pod](s.Client)
	p, err := pods.Create(ctx, newPod("keep", nil))
	if err != nil {
		t.Fatal(err)
	}
	s.Restart()
	got, err := pods.Get(ctx, "default", "keep")
	if err != nil || got.Metadata.Uid != p.Metadata.Uid {
		t.Fatalf("after restart: %v %v", err, got)
	}
}

var _ = apiserver.FinalizerOrphan

func TestEventsExpire(t *testing.T) {
	s := apiservertest.Start(t, func(c *apiserver.Config) { c.EventTTL = time.Second })
	ctx := ctxT(t)
	events := client.For[*v1.Event](s.Client)
	if _, err := events.Create(ctx, &v1.Event{
		Metadata:       &v1.ObjectMeta{Name: "e1"},
		InvolvedObject: &v1.ObjectReference{Kind: "Pod", Name: "p"}, Reason: "Test",
	}); err != nil {
		t.Fatal(err)
	}
	// Other kinds do not expire.
	if _, err := client.For[*v1.ConfigMap](s.Client).Create(ctx, &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "stays"}}); err != nil {
		t.Fatal(err)
	}
	// TTL 1s + a 1s lease reuse window: gone within a few seconds.
	wait.Eventually(t, 20*time.Second, "event e1 expired", func() error {
		if _, err := events.Get(ctx, "default", "e1"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get event e1: %v", err)
		}
		return nil
	})
	if _, err := client.For[*v1.ConfigMap](s.Client).Get(ctx, "default", "stays"); err != nil {
		t.Fatalf("configmap expired too: %v", err)
	}
}
