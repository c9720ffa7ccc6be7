package deployment_test

import (
	"context"
	"fmt"
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
	"github.com/tugboat/tugboat/controllers/deployment"
	"github.com/tugboat/tugboat/controllers/replicaset"
)

type env struct {
	ctx  context.Context
	c    *client.Client
	deps *client.Typed[*v1.Deployment]
	rss  *client.Typed[*v1.ReplicaSet]
	pods *client.Typed[*v1.Pod]
}

// start runs an apiserver, a fake cluster of three nodes and the
// ReplicaSet and Deployment controllers.
func start(t *testing.T, opts controllertest.ClusterOptions) *env {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 120*time.Second)
	d := controllertest.Deps(ctx, s.Client)
	rsc, err := replicaset.New(d, replicaset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dc, err := deployment.New(d, deployment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	opts.Nodes = []string{"n1", "n2", "n3"}
	controllertest.StartCluster(t, s.Client, opts)
	controllertest.RunAll(ctx, t, d.Informers, rsc, dc)
	return &env{ctx: ctx, c: s.Client, deps: client.For[*v1.Deployment](s.Client),
		rss: client.For[*v1.ReplicaSet](s.Client), pods: client.For[*v1.Pod](s.Client)}
}

func newDeployment(name string, replicas int32, image string) *v1.Deployment {
	lbl := map[string]string{"app": name}
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(replicas),
			Selector: &v1.LabelSelector{MatchLabels: lbl},
			Template: &v1.PodTemplateSpec{
				Metadata: &v1.ObjectMeta{Labels: lbl},
				Spec:     &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: image}}},
			},
		},
	}
}

// waitComplete waits for the rollout of the current generation to finish,
// as `tugctl rollout status` would, and returns the Deployment.
func (e *env) waitComplete(t *testing.T, name string) *v1.Deployment {
	t.Helper()
	var d *v1.Deployment
	wait.Eventually(t, 30*time.Second, "the rollout of "+name+" to complete", func() error {
		var err error
		if d, err = e.deps.Get(e.ctx, "default", name); err != nil {
			return err
		}
		st, n := d.GetStatus(), d.Spec.GetReplicas()
		p := controller.GetCondition(st.GetConditions(), "Progressing")
		if st.GetObservedGeneration() >= d.Metadata.Generation && st.GetUpdatedReplicas() == n && st.GetReplicas() == n &&
			st.GetAvailableReplicas() == n && p != nil && p.Reason == deployment.ReasonNewRSAvailable {
			return nil
		}
		return fmt.Errorf("generation %d status %v", d.Metadata.Generation, st)
	})
	return d
}

func (e *env) setTemplate(t *testing.T, name string, fn func(*v1.PodTemplateSpec)) {
	t.Helper()
	if _, err := e.deps.Mutate(e.ctx, "default", name, false, func(d *v1.Deployment) error {
		fn(d.Spec.Template)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// replicaSets returns the Deployment's ReplicaSets by revision.
func (e *env) replicaSets(t *testing.T, d *v1.Deployment) map[string]*v1.ReplicaSet {
	t.Helper()
	list, _, err := e.rss.List(e.ctx, client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1.ReplicaSet{}
	for _, rs := range list {
		if ref := controller.ControllerRef(rs.Metadata); ref != nil && ref.Uid == d.Metadata.Uid {
			out[rs.Metadata.Annotations[deployment.RevisionAnnotation]] = rs
		}
	}
	return out
}

// bounds records, over every state the pods pass through, the fewest
// available and the most existing pods of an app.
type bounds struct {
	mu             sync.Mutex
	minAvail, maxN int
}

func (e *env) observe(t *testing.T, app string) *bounds {
	b := &bounds{minAvail: 1 << 30}
	controllertest.ObservePods(e.ctx, t, e.c, "default", func(all []*v1.Pod) {
		n, avail := 0, 0
		for _, p := range all {
			// Pods being deleted have stopped counting (as for
			// Kubernetes' maxSurge); the fake kubelet removes them at once.
			if p.Metadata.Labels["app"] != app || !controller.IsPodActive(p) {
				continue
			}
			n++
			if controller.IsPodReady(p) {
				avail++
			}
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.minAvail, b.maxN = min(b.minAvail, avail), max(b.maxN, n)
	})
	return b
}

func (b *bounds) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.minAvail, b.maxN = 1<<30, 0
}

func (b *bounds) check(t *testing.T, what string, minAvail, maxN int) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	t.Logf("%s: fewest available %d, most pods %d", what, b.minAvail, b.maxN)
	if b.minAvail < minAvail || b.maxN > maxN {
		t.Errorf("%s: saw %d available (want >= %d) and %d pods (want <= %d)", what, b.minAvail, minAvail, b.maxN, maxN)
	}
}

// TestRollingUpdateAndUndo: a rolling update of 10 replicas with
// maxUnavailable=1 and maxSurge=1 never has fewer than 9 available or more
// than 11 pods; undo (the old ReplicaSet's template copied back, as tugctl
// does) makes the old ReplicaSet current again as revision 3.
func TestRollingUpdateAndUndo(t *testing.T) {
	e := start(t, controllertest.ClusterOptions{ReadyDelay: 100 * time.Millisecond})
	d := newDeployment("web", 10, "nginx:1")
	d.Spec.Strategy = &v1.DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &v1.RollingUpdateDeployment{MaxSurge: "1", MaxUnavailable: "1"}}
	if _, err := e.deps.Create(e.ctx, d); err != nil {
		t.Fatal(err)
	}
	d = e.waitComplete(t, "web")
	if d.Metadata.Annotations[deployment.RevisionAnnotation] != "1" {
		t.Fatalf("revision %q", d.Metadata.Annotations[deployment.RevisionAnnotation])
	}
	b := e.observe(t, "web")
	b.reset()

	e.setTemplate(t, "web", func(tp *v1.PodTemplateSpec) { tp.Spec.Containers[0].Image = "nginx:2" })
	d = e.waitComplete(t, "web")
	b.check(t, "rollout to nginx:2", 9, 11)
	rss := e.replicaSets(t, d)
	if len(rss) != 2 || rss["1"] == nil || rss["2"] == nil || d.Metadata.Annotations[deployment.RevisionAnnotation] != "2" {
		t.Fatalf("want revisions 1 and 2, deployment at 2; have %v, deployment %v", keys(rss), d.Metadata.Annotations)
	}
	if rs2 := rss["2"]; rs2.Spec.Template.Spec.Containers[0].Image != "nginx:2" || rs2.Metadata.Labels[deployment.PodTemplateHashLabel] == "" ||
		rs2.Metadata.Name != "web-"+rs2.Metadata.Labels[deployment.PodTemplateHashLabel] || rss["1"].Spec.GetReplicas() != 0 {
		t.Fatalf("new replica set %s: %v; old has %d replicas", rs2.Metadata.Name, rs2.Spec.Template, rss["1"].Spec.GetReplicas())
	}

	// Undo, the way tugctl does it: copy revision 1's template back.
	old := proto.Clone(rss["1"].Spec.Template).(*v1.PodTemplateSpec)
	delete(old.Metadata.Labels, deployment.PodTemplateHashLabel)
	b.reset()
	e.setTemplate(t, "web", func(tp *v1.PodTemplateSpec) { proto.Reset(tp); proto.Merge(tp, old) })
	d = e.waitComplete(t, "web")
	b.check(t, "undo to revision 1", 9, 11)
	rss = e.replicaSets(t, d)
	rs3 := rss["3"]
	if rs3 == nil || rs3.Metadata.Uid != findUID(t, e, "web", "nginx:1") || rs3.Metadata.Annotations[deployment.RevisionHistoryAnnotation] != "1" ||
		d.Metadata.Annotations[deployment.RevisionAnnotation] != "3" || rs3.Spec.GetReplicas() != 10 {
		t.Fatalf("after undo want the nginx:1 replica set as revision 3 (history 1) with 10 replicas; have revisions %v, deployment %v", keys(rss), d.Metadata.Annotations)
	}
	pods, _, _ := e.pods.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
	for _, p := range pods {
		if controller.IsPodActive(p) && p.Spec.Containers[0].Image != "nginx:1" {
			t.Errorf("pod %s still runs %s", p.Metadata.Name, p.Spec.Containers[0].Image)
		}
	}
}

func findUID(t *testing.T, e *env, app, image string) string {
	list, _, _ := e.rss.List(e.ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=" + app})
	for _, rs := range list {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			return rs.Metadata.Uid
		}
	}
	t.Fatalf("no replica set runs %s", image)
	return ""
}

func keys(m map[string]*v1.ReplicaSet) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestProgressDeadlineExceeded: a rollout whose new pods never become
// ready is reported as ProgressDeadlineExceeded, and the old pods keep
// serving.
func TestProgressDeadlineExceeded(t *testing.T) {
	e := start(t, controllertest.ClusterOptions{NeverReady: func(p *v1.Pod) bool {
		return p.Spec.Containers[0].Image == "broken:1"
	}})
	d := newDeployment("stuck", 2, "nginx:1")
	d.Spec.ProgressDeadlineSeconds = proto.Int32(2)
	if _, err := e.deps.Create(e.ctx, d); err != nil {
		t.Fatal(err)
	}
	e.waitComplete(t, "stuck")
	e.setTemplate(t, "stuck", func(tp *v1.PodTemplateSpec) { tp.Spec.Containers[0].Image = "broken:1" })
	wait.Eventually(t, 15*time.Second, "deployment stuck to exceed its progress deadline", func() error {
		d, err := e.deps.Get(e.ctx, "default", "stuck")
		if err != nil {
			return err
		}
		p := controller.GetCondition(d.GetStatus().GetConditions(), "Progressing")
		a := controller.GetCondition(d.GetStatus().GetConditions(), "Available")
		if p != nil && p.Status == "False" && p.Reason == deployment.ReasonTimedOut && a != nil && a.Status == "True" &&
			d.Status.AvailableReplicas == 2 {
			return nil
		}
		return fmt.Errorf("status %v", d.GetStatus())
	})
}

// TestRecreatePauseAndHistory: Recreate never runs old and new pods at
// once; a paused Deployment scales but does not roll out; old ReplicaSets
// beyond revisionHistoryLimit are deleted.
func TestRecreatePauseAndHistory(t *testing.T) {
	e := start(t, controllertest.ClusterOptions{})
	d := newDeployment("batch", 3, "app:1")
	d.Spec.Strategy = &v1.DeploymentStrategy{Type: "Recreate"}
	d.Spec.RevisionHistoryLimit = proto.Int32(1)
	if _, err := e.deps.Create(e.ctx, d); err != nil {
		t.Fatal(err)
	}
	e.waitComplete(t, "batch")
	var mu sync.Mutex
	mixed := 0
	controllertest.ObservePods(e.ctx, t, e.c, "default", func(all []*v1.Pod) {
		images := map[string]bool{}
		for _, p := range all {
			if p.Metadata.Labels["app"] == "batch" && p.Status.GetPhase() != "Succeeded" && p.Status.GetPhase() != "Failed" {
				images[p.Spec.Containers[0].Image] = true
			}
		}
		if len(images) > 1 {
			mu.Lock()
			mixed++
			mu.Unlock()
		}
	})
	e.setTemplate(t, "batch", func(tp *v1.PodTemplateSpec) { tp.Spec.Containers[0].Image = "app:2" })
	e.waitComplete(t, "batch")
	mu.Lock()
	if mixed > 0 {
		t.Errorf("Recreate: old and new pods existed together in %d states", mixed)
	}
	mu.Unlock()

	// Pause: a template change does nothing, a scale still applies.
	if _, err := e.deps.Mutate(e.ctx, "default", "batch", false, func(d *v1.Deployment) error {
		d.Spec.Paused = true
		d.Spec.Template.Spec.Containers[0].Image = "app:3"
		d.Spec.Replicas = proto.Int32(4)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 15*time.Second, "deployment batch paused and scaled to 4", func() error {
		d, _ := e.deps.Get(e.ctx, "default", "batch")
		p := controller.GetCondition(d.GetStatus().GetConditions(), "Progressing")
		if d.GetStatus().GetObservedGeneration() == d.Metadata.Generation && p != nil && p.Reason == deployment.ReasonPaused &&
			d.Status.AvailableReplicas == 4 {
			return nil
		}
		return fmt.Errorf("status %v", d.GetStatus())
	})
	d, _ = e.deps.Get(e.ctx, "default", "batch")
	// Paused, the new template has no ReplicaSet yet, so both existing ones
	// are old: with a history limit of 1, revision 1 goes (as in Kubernetes).
	if rss := e.replicaSets(t, d); len(rss) != 1 || rss["2"] == nil || rss["2"].Spec.GetReplicas() != 4 {
		t.Fatalf("paused: want only revision 2, scaled to 4; have %v", keys(rss))
	}
	if _, err := e.deps.Mutate(e.ctx, "default", "batch", false, func(d *v1.Deployment) error {
		d.Spec.Paused = false
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	d = e.waitComplete(t, "batch")
	wait.Eventually(t, 10*time.Second, "revision history trimmed to one old ReplicaSet", func() error {
		rss := e.replicaSets(t, d)
		if len(rss) == 2 && rss["3"] != nil && rss["2"] != nil {
			return nil
		}
		return fmt.Errorf("revisions %v (history limit 1)", keys(rss))
	})
}
