package kubeapi_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// testScaleSubresourceRBAC: the scale subresource is authorized as
// Kubernetes authorizes it, get/update/patch on deployments/scale, not on
// deployments: a user whose Role grants only deployments/scale reads and
// changes the replica count (GET, PUT and PATCH of .../scale) and nothing
// else of the Deployment, and a Scale carrying other changes moves only the
// count.
func testScaleSubresourceRBAC(t *testing.T, e *env) {
	ctx := context.Background()
	admin := e.clientset(t)
	const ns = "default"
	rules := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, Verbs: []string{"get", "update", "patch"}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: om("scaler"), Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: om("scaler"),
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "scaler"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "scaler"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{ObjectMeta: om("scaled"), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "scaled"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "scaled"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}}}
	if _, err := admin.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: e.url, BearerToken: scalerToken, TLSClientConfig: rest.TLSClientConfig{CAFile: e.srv.PKIDir + "/ca.crt"}}
	scaler, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	deps := scaler.AppsV1().Deployments(ns)
	var sc *autoscalingv1.Scale
	eventually(t, "the scaler's Role in effect", func() error {
		sc, err = deps.GetScale(ctx, "scaled", metav1.GetOptions{})
		return err
	})
	if sc.Spec.Replicas != 1 || sc.Status.Selector != "app=scaled" {
		t.Errorf("GET scale: %+v", sc)
	}
	// The controllers write the Deployment's status meanwhile: a stale
	// resourceVersion is a Conflict, as in Kubernetes.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := deps.GetScale(ctx, "scaled", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Replicas = 3
		cur.Labels = map[string]string{"sneaked": "in"}
		sc, err = deps.UpdateScale(ctx, "scaled", cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil || sc.Spec.Replicas != 3 {
		t.Fatalf("PUT scale: %v %+v", err, sc)
	}
	if got := e.deployment(t, "scaled"); got.Spec.GetReplicas() != 3 || got.Metadata.Labels["sneaked"] != "" {
		t.Errorf("after PUT scale: replicas %d, labels %v", got.Spec.GetReplicas(), got.Metadata.Labels)
	}
	if _, err := deps.Patch(ctx, "scaled", types.MergePatchType, []byte(`{"spec":{"replicas":2}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("PATCH scale: %v", err)
	}
	if got := e.deployment(t, "scaled"); got.Spec.GetReplicas() != 2 {
		t.Errorf("after PATCH scale: replicas %d, want 2", got.Spec.GetReplicas())
	}
	// Nothing else of the Deployment: not read, not written.
	_, err = deps.Get(ctx, "scaled", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "scaler" cannot get resource "deployments" in API group "apps"`) {
		t.Errorf("GET the Deployment with only deployments/scale: %v", err)
	}
	_, err = deps.Patch(ctx, "scaled", types.MergePatchType, []byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot patch resource "deployments"`) {
		t.Errorf("PATCH the Deployment with only deployments/scale: %v", err)
	}
	// And update on deployments does not grant the scale subresource: the
	// viewer may get deployments, not update their scale.
	viewer, err := kubernetes.NewForConfig(&rest.Config{Host: e.url, BearerToken: viewerToken, TLSClientConfig: rest.TLSClientConfig{CAFile: e.srv.PKIDir + "/ca.crt"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = viewer.AppsV1().Deployments(ns).UpdateScale(ctx, "scaled", sc, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `cannot update resource "deployments/scale" in API group "apps"`) {
		t.Errorf("viewer PUT scale: %v", err)
	}
	if err := admin.AppsV1().Deployments(ns).Delete(ctx, "scaled", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}
