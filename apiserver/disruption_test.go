package apiserver_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// The built-in PodDisruptionBudget check: an eviction takes one of the
// budget's allowed disruptions (recorded with the pod in disruptedPods) or
// is refused with TooManyRequests; nothing changes on a refusal.
func TestEvictionRespectsDisruptionBudget(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	pods := client.For[*v1.Pod](s.Client)
	pdbs := client.For[*v1.PodDisruptionBudget](s.Client)
	mk := func(name string, ready bool) {
		p, err := pods.Create(ctx, &v1.Pod{
			Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "db"}},
			Spec:     &v1.PodSpec{NodeName: "n1", Containers: []*v1.Container{{Name: "c", Image: "busybox"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		st := "False"
		if ready {
			st = "True"
		}
		p.Status = &v1.PodStatus{Phase: "Running", Conditions: []*v1.Condition{{Type: "Ready", Status: st}}}
		if _, err = pods.UpdateStatus(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"db-0", "db-1", "db-2"} {
		mk(n, true)
	}
	mk("db-sick", false)
	pdb, err := pdbs.Create(ctx, &v1.PodDisruptionBudget{Metadata: &v1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: &v1.PodDisruptionBudgetSpec{MinAvailable: "2", Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}})
	if err != nil {
		t.Fatal(err)
	}
	// The controller has not counted yet: refused.
	if _, err := s.Client.Evict(ctx, "default", "db-0", client.DeleteOptions{}); !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "still being processed") {
		t.Fatalf("eviction before the budget's status: %v", err)
	}
	pdb.Status = &v1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Metadata.Generation, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 4}
	if _, err := pdbs.UpdateStatus(ctx, pdb); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Evict(ctx, "default", "db-0", client.DeleteOptions{}); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	got, _ := pdbs.Get(ctx, "default", "db")
	if got.Status.DisruptionsAllowed != 0 || got.Status.DisruptedPods["db-0"] == nil {
		t.Fatalf("budget after an eviction: %v", got.Status)
	}
	_, err = s.Client.Evict(ctx, "default", "db-1", client.DeleteOptions{})
	if !apierrors.IsTooManyRequests(err) || !strings.Contains(err.Error(), "The disruption budget db needs 2 healthy pods and has 3 currently") {
		t.Fatalf("second eviction: %v", err)
	}
	if p, _ := pods.Get(ctx, "default", "db-1"); p.GetMetadata().GetDeletionTimestamp() != nil {
		t.Fatal("a refused eviction deleted the pod")
	}
	// A not-ready pod goes without taking from a budget that is met.
	if _, err := s.Client.Evict(ctx, "default", "db-sick", client.DeleteOptions{}); err != nil {
		t.Fatalf("evicting a not-ready pod of a healthy budget: %v", err)
	}
	// Two budgets over one pod: refused.
	if _, err := pdbs.Create(ctx, &v1.PodDisruptionBudget{Metadata: &v1.ObjectMeta{Name: "all", Namespace: "default"},
		Spec: &v1.PodDisruptionBudgetSpec{MaxUnavailable: "100%", Selector: &v1.LabelSelector{}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Client.Evict(ctx, "default", "db-2", client.DeleteOptions{GracePeriodSeconds: proto.Int64(0)}); err == nil || !strings.Contains(err.Error(), "more than one PodDisruptionBudget") {
		t.Fatalf("eviction under two budgets: %v", err)
	}
}
