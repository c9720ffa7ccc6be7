package kubeapi_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testClientGoApplyStatus: client-go's ApplyStatus (server-side apply of
// the status subresource) sets status and records a status entry for its
// manager; what the intent says outside status is not applied; a second
// manager's different value for the same condition conflicts, and wins
// with force; an apply of the status of an object that does not exist is
// NotFound (it does not create it); the scale subresource refuses apply.
func testClientGoApplyStatus(t *testing.T, e *env) {
	ctx := context.Background()
	cs := e.clientset(t)
	svcs := cs.CoreV1().Services("default")
	if _, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: om("ssa-status"), Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cond := func(status, reason string) *corev1ac.ServiceApplyConfiguration {
		return corev1ac.Service("ssa-status", "default").
			WithSpec(corev1ac.ServiceSpec().WithPorts(corev1ac.ServicePort().WithPort(81))).
			WithStatus(corev1ac.ServiceStatus().WithConditions(metav1ac.Condition().
				WithType("Probed").WithStatus(metav1.ConditionStatus(status)).WithReason(reason).
				WithMessage("set by " + reason).WithLastTransitionTime(metav1.Now())))
	}
	if _, err := svcs.ApplyStatus(ctx, cond("True", "Prober"), metav1.ApplyOptions{FieldManager: "prober"}); err != nil {
		t.Fatalf("ApplyStatus: %v", err)
	}
	got, err := client.For[*v1.Service](e.srv.Client).Get(ctx, "default", "ssa-status")
	if err != nil {
		t.Fatal(err)
	}
	if c := got.GetStatus().GetConditions(); len(c) != 1 || c[0].Type != "Probed" || c[0].Status != "True" || c[0].Reason != "Prober" {
		t.Errorf("after ApplyStatus, status.conditions %v", c)
	}
	if p := got.GetSpec().GetPorts(); len(p) != 1 || p[0].Port != 80 {
		t.Errorf("a status apply changed spec.ports to %v", p)
	}
	m := managerEntry(got, "prober", "status")
	if m == nil || m.Operation != "Apply" || !owns(m, "f:status", "f:conditions") || owns(m, "f:spec") {
		t.Fatalf("after ApplyStatus, managedFields %v", got.Metadata.ManagedFields)
	}

	// Another manager's value for the same condition: a conflict naming
	// the owner, nothing changed; with force it takes the field.
	_, err = svcs.ApplyStatus(ctx, cond("False", "Other"), metav1.ApplyOptions{FieldManager: "other"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflicts with "prober" with subresource "status"`) {
		t.Fatalf("a second manager's ApplyStatus: %v, want a conflict with prober", err)
	}
	if s, _ := svcs.Get(ctx, "ssa-status", metav1.GetOptions{}); s.Status.Conditions[0].Reason != "Prober" {
		t.Errorf("the refused apply changed the condition: %v", s.Status.Conditions)
	}
	if _, err := svcs.ApplyStatus(ctx, cond("False", "Other"), metav1.ApplyOptions{FieldManager: "other", Force: true}); err != nil {
		t.Fatalf("forced ApplyStatus: %v", err)
	}
	got, _ = client.For[*v1.Service](e.srv.Client).Get(ctx, "default", "ssa-status")
	if c := got.GetStatus().GetConditions(); len(c) != 1 || c[0].Reason != "Other" {
		t.Errorf("after the forced apply, status.conditions %v", c)
	}
	if owns(managerEntry(got, "prober", "status"), "f:status", "f:conditions", `k:{"type":"Probed"}`, "f:reason") {
		t.Errorf("prober still owns the condition's reason after a forced apply: %v", got.Metadata.ManagedFields)
	}

	// The status of an object that does not exist: NotFound, nothing made.
	missing := corev1ac.Service("ssa-missing", "default").WithStatus(corev1ac.ServiceStatus())
	if _, err := svcs.ApplyStatus(ctx, missing, metav1.ApplyOptions{FieldManager: "prober"}); !apierrors.IsNotFound(err) {
		t.Errorf("ApplyStatus of a missing Service: %v, want NotFound", err)
	}
	if _, err := svcs.Get(ctx, "ssa-missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ApplyStatus created ssa-missing: %v", err)
	}

	// Apply to the scale subresource is refused, naming it.
	_, err = cs.AppsV1().Deployments("default").Patch(ctx, "ssa-status", types.ApplyPatchType,
		[]byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","spec":{"replicas":2}}`), metav1.PatchOptions{FieldManager: "x"}, "scale")
	if err == nil || !strings.Contains(err.Error(), `server-side apply of "scale" is not supported`) {
		t.Errorf("apply to scale: %v", err)
	}
	if err := svcs.Delete(ctx, "ssa-status", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
