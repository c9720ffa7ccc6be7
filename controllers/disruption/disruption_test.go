package disruption_test

import (
	"fmt"
	"sync"
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
	"github.com/tugboat/tugboat/controllers/disruption"
	"github.com/tugboat/tugboat/controllers/replicaset"
)

// A Deployment of 3 under minAvailable=2 and one of 4 under
// maxUnavailable=25%: the budgets count healthy and expected pods, and
// evicting every pod one at a time (retrying refusals, as drain does)
// never leaves fewer than 2 ready pods of the first.
func TestBudgetsAndEvictions(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	rsc, _ := replicaset.New(d, replicaset.Config{})
	dc, _ := deployment.New(d, deployment.Config{})
	pc, err := disruption.New(d, disruption.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"}, ReadyDelay: 100 * time.Millisecond})
	controllertest.RunAll(ctx, t, d.Informers, rsc, dc, pc)
	deps := client.For[*v1.Deployment](s.Client)
	pdbs := client.For[*v1.PodDisruptionBudget](s.Client)
	pods := client.For[*v1.Pod](s.Client)
	for _, app := range []struct {
		name     string
		replicas int32
		spec     *v1.PodDisruptionBudgetSpec
	}{
		{"web", 3, &v1.PodDisruptionBudgetSpec{MinAvailable: "2"}},
		{"api", 4, &v1.PodDisruptionBudgetSpec{MaxUnavailable: "25%"}},
	} {
		lbl := map[string]string{"app": app.name}
		if _, err := deps.Create(ctx, &v1.Deployment{Metadata: &v1.ObjectMeta{Name: app.name, Namespace: "default"}, Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(app.replicas), Selector: &v1.LabelSelector{MatchLabels: lbl},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "echo"}}}},
		}}); err != nil {
			t.Fatal(err)
		}
		app.spec.Selector = &v1.LabelSelector{MatchLabels: lbl}
		if _, err := pdbs.Create(ctx, &v1.PodDisruptionBudget{Metadata: &v1.ObjectMeta{Name: app.name, Namespace: "default"}, Spec: app.spec}); err != nil {
			t.Fatal(err)
		}
	}
	status := func(name string, expected, desired, allowed int32) {
		t.Helper()
		wait.Eventually(t, 20*time.Second, "budget "+name, func() error {
			p, err := pdbs.Get(ctx, "default", name)
			if err != nil {
				return err
			}
			st := p.GetStatus()
			c := controller.GetCondition(st.GetConditions(), "DisruptionAllowed")
			if st.GetExpectedPods() != expected || st.GetDesiredHealthy() != desired || st.GetDisruptionsAllowed() != allowed ||
				st.GetCurrentHealthy() != desired+allowed || c == nil || c.Status != "True" || st.ObservedGeneration != p.Metadata.Generation {
				return fmt.Errorf("status %v", st)
			}
			return nil
		})
	}
	status("web", 3, 2, 1)
	status("api", 4, 3, 1) // 25% of 4 rounded up is 1 unavailable

	var mu sync.Mutex
	fewest, armed := 3, false
	controllertest.ObservePods(ctx, t, s.Client, "default", func(all []*v1.Pod) {
		n := 0
		for _, p := range all {
			if p.Metadata.Labels["app"] == "web" && controller.IsPodReady(p) && p.Metadata.DeletionTimestamp == nil {
				n++
			}
		}
		mu.Lock()
		if armed { // the initial list arrives one pod at a time
			fewest = min(fewest, n)
		}
		mu.Unlock()
	})
	mu.Lock()
	armed = true
	mu.Unlock()
	list, _, err := pods.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, p := range list {
		wait.Eventually(t, 30*time.Second, "evicting "+p.Metadata.Name, func() error {
			_, err := s.Client.Evict(ctx, "default", p.Metadata.Name, client.DeleteOptions{})
			if apierrors.IsTooManyRequests(err) {
				refused++
			}
			return err
		})
	}
	status("web", 3, 2, 1)
	mu.Lock()
	defer mu.Unlock()
	if fewest < 2 {
		t.Errorf("evictions left %d ready pods; the budget wants 2", fewest)
	}
	if refused == 0 {
		t.Errorf("no eviction was ever refused: the budget did not hold anything back")
	}
}
