package kubeapi_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrs "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
)

// infoController is a controller in the sample-controller's shape, written
// only against client-go: an informer on Deployments feeds a rate-limited
// work queue; a worker reconciles each annotated Deployment into a
// ConfigMap "<name>-info" (owned by it) that records its replicas.
type infoController struct {
	cs     kubernetes.Interface
	lister appslisters.DeploymentLister
	queue  workqueue.TypedRateLimitingInterface[string]
}

const infoAnnotation = "example.com/info"

func (c *infoController) run(ctx context.Context) {
	defer c.queue.ShutDown()
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		key, quit := c.queue.Get()
		if quit {
			return
		}
		if err := c.sync(ctx, key); err != nil {
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

func (c *infoController) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	d, err := c.lister.Deployments(ns).Get(name)
	if apierrs.IsNotFound(err) {
		return nil // the ConfigMap goes with its owner (garbage collector)
	}
	if err != nil || d.Annotations[infoAnnotation] != "true" {
		return err
	}
	want := fmt.Sprint(ptr.Deref(d.Spec.Replicas, 1))
	cms := c.cs.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(ctx, name+"-info", metav1.GetOptions{})
	if apierrs.IsNotFound(err) {
		_, err = cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-info", OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
			Data: map[string]string{"replicas": want}}, metav1.CreateOptions{})
		return err
	}
	if err != nil || cm.Data["replicas"] == want {
		return err
	}
	cm = cm.DeepCopy()
	cm.Data["replicas"] = want
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

func testClientGoController(t *testing.T, e *env) {
	cs := e.clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := informers.NewSharedInformerFactory(cs, 0)
	inf := f.Apps().V1().Deployments()
	c := &infoController{cs: cs, lister: inf.Lister(), queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, n any) { enqueue(n) }, DeleteFunc: enqueue}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		t.Fatal("the deployment informer did not sync")
	}
	go c.run(ctx)

	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "info"}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "info", Annotations: map[string]string{infoAnnotation: "true"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: sel, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: sel.MatchLabels}, Spec: podSpec}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	replicas := func(want string) func() error {
		return func() error {
			cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "info-info", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if cm.Data["replicas"] != want || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Name != "info" {
				return fmt.Errorf("configmap %v owners %v", cm.Data, cm.OwnerReferences)
			}
			return nil
		}
	}
	eventually(t, "the controller's ConfigMap", replicas("0"))
	if _, err := cs.AppsV1().Deployments("default").Patch(ctx, "info", "application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap following the scale", replicas("2"))
	list, err := c.lister.List(labels.Everything())
	if err != nil || len(list) == 0 {
		t.Fatalf("lister: %v %v", list, err)
	}
}

// testClientGoInformerRestart: a pod informer (watch-list on, client-go's
// default) sees every change, before and after an apiserver restart.
func testClientGoInformerRestart(t *testing.T, e *env) {
	cs := e.clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := cs.CoreV1().Pods("default")
	var mu sync.Mutex
	seen := map[string]string{} // name -> last event: added, updated (label value), deleted
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	inf := f.Core().V1().Pods().Informer()
	record := func(obj any, what string) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		p := obj.(*corev1.Pod)
		if what == "updated" {
			what = "updated:" + p.Labels["v"]
		}
		mu.Lock()
		seen[p.Name] = what
		mu.Unlock()
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { record(o, "added") },
		UpdateFunc: func(_, n any) { record(n, "updated") },
		DeleteFunc: func(o any) { record(o, "deleted") },
	}); err != nil {
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), inf.HasSynced)
	is := func(name, want string) func() error {
		return func() error {
			mu.Lock()
			defer mu.Unlock()
			if seen[name] != want {
				return fmt.Errorf("pod %s: last event %q, want %q", name, seen[name], want)
			}
			return nil
		}
	}
	create := func(name string) {
		if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: podSpec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	label := func(name, v string) {
		if _, err := pods.Patch(ctx, name, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"v":"`+v+`"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("inf-a")
	create("inf-b")
	eventually(t, "inf-a added", is("inf-a", "added"))
	label("inf-a", "1")
	eventually(t, "inf-a updated", is("inf-a", "updated:1"))

	e.srv.Restart()
	label("inf-a", "2")
	create("inf-c")
	if err := pods.Delete(ctx, "inf-b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "inf-a updated after the restart", is("inf-a", "updated:2"))
	eventually(t, "inf-c added after the restart", is("inf-c", "added"))
	eventually(t, "inf-b deleted after the restart", is("inf-b", "deleted"))
	for _, name := range []string{"inf-a", "inf-c"} {
		if _, ok, _ := inf.GetStore().GetByKey("default/" + name); !ok {
			t.Fatalf("the informer's store lacks %s", name)
		}
	}
	time.Sleep(0)
}
