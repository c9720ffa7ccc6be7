package kubeapi_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// restConfig is the admin's client-go config, with client-go's defaults
// otherwise (protobuf request bodies for built-in kinds).
func (e *env) restConfig() *rest.Config {
	pki := e.srv.PKIDir
	return &rest.Config{Host: e.url, TLSClientConfig: rest.TLSClientConfig{
		CAFile: filepath.Join(pki, "ca.crt"), CertFile: filepath.Join(pki, "admin.crt"), KeyFile: filepath.Join(pki, "admin.key")}}
}

func (e *env) clientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(e.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// resourceClient is what client-go's typed clients have in common.
type resourceClient[T runtime.Object, L runtime.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
	List(context.Context, metav1.ListOptions) (L, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
	Delete(context.Context, string, metav1.DeleteOptions) error
}

// crud creates obj, reads it back, finds it in a list, updates a label
// and deletes it, checking each step's effect.
func crud[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](t *testing.T, c resourceClient[T, L], obj T) {
	t.Helper()
	ctx := context.Background()
	name := obj.GetName()
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" || created.GetCreationTimestamp().Time.IsZero() {
		t.Fatalf("create %s: server fields not set: uid %q rv %q", name, created.GetUID(), created.GetResourceVersion())
	}
	got, err := c.Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("get %s: %v", name, err)
	}
	list, err := c.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range items {
		if m, _ := meta.Accessor(it); m != nil && m.GetName() == name {
			found = true
		}
	}
	if !found {
		t.Fatalf("list does not have %s", name)
	}
	// A controller may write the object between the read and the update
	// (a 409 Conflict, as from kube-apiserver): read again and retry.
	var updated T
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got = cur
		got.SetLabels(map[string]string{"updated": "yes"})
		updated, err = c.Update(ctx, got, metav1.UpdateOptions{})
		return err
	})
	if err != nil || updated.GetLabels()["updated"] != "yes" || updated.GetResourceVersion() == got.GetResourceVersion() {
		t.Fatalf("update %s: %v", name, err)
	}
	if err := c.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete %s: %v", name, err)
	}
	eventually(t, name+" gone", func() error {
		if _, err := c.Get(ctx, name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("%s still there", name)
		}
		return nil
	})
}

func om(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

var podSpec = corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "tugboat.local/busybox:latest"}}}

// testClientGoCRUD: client-go's typed clients create, read, list, update
// and delete every kind Tugboat serves.
func testClientGoCRUD(t *testing.T, e *env) {
	cs := e.clientset(t)
	ns := "default"
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "cg"}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "cg"}}, Spec: podSpec}
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}
	subjects := []rbacv1.Subject{{Kind: "User", Name: "someone", APIGroup: "rbac.authorization.k8s.io"}}
	t.Run("Namespace", func(t *testing.T) { crud(t, cs.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: om("cg-ns")}) })
	t.Run("Node", func(t *testing.T) { crud(t, cs.CoreV1().Nodes(), &corev1.Node{ObjectMeta: om("cg-node")}) })
	t.Run("Pod", func(t *testing.T) {
		crud(t, cs.CoreV1().Pods(ns), &corev1.Pod{ObjectMeta: om("cg-pod"), Spec: podSpec})
	})
	t.Run("Event", func(t *testing.T) {
		crud(t, cs.CoreV1().Events(ns), &corev1.Event{ObjectMeta: om("cg-event"), Reason: "Tested", Message: "hello", Type: "Normal",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "x", APIVersion: "v1"}, Source: corev1.EventSource{Component: "test"}})
	})
	t.Run("Lease", func(t *testing.T) {
		crud(t, cs.CoordinationV1().Leases(ns), &coordinationv1.Lease{ObjectMeta: om("cg-lease"), Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("me"), LeaseDurationSeconds: ptr.To[int32](10)}})
	})
	t.Run("ConfigMap", func(t *testing.T) {
		crud(t, cs.CoreV1().ConfigMaps(ns), &corev1.ConfigMap{ObjectMeta: om("cg-cm"), Data: map[string]string{"a": "b"}})
	})
	t.Run("Secret", func(t *testing.T) {
		crud(t, cs.CoreV1().Secrets(ns), &corev1.Secret{ObjectMeta: om("cg-secret"), Data: map[string][]byte{"k": []byte("v")}, Type: corev1.SecretTypeOpaque})
	})
	t.Run("Service", func(t *testing.T) {
		crud(t, cs.CoreV1().Services(ns), &corev1.Service{ObjectMeta: om("cg-svc"), Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "cg"}, Ports: []corev1.ServicePort{{Port: 80}}}})
	})
	t.Run("Endpoints", func(t *testing.T) {
		crud(t, cs.CoreV1().Endpoints(ns), &corev1.Endpoints{ObjectMeta: om("cg-ep"), Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.0.9"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: "TCP"}}}}})
	})
	t.Run("ReplicaSet", func(t *testing.T) {
		crud(t, cs.AppsV1().ReplicaSets(ns), &appsv1.ReplicaSet{ObjectMeta: om("cg-rs"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](0), Selector: sel, Template: tmpl}})
	})
	t.Run("Deployment", func(t *testing.T) {
		crud(t, cs.AppsV1().Deployments(ns), &appsv1.Deployment{ObjectMeta: om("cg-deploy"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: sel, Template: tmpl}})
	})
	t.Run("DaemonSet", func(t *testing.T) {
		crud(t, cs.AppsV1().DaemonSets(ns), &appsv1.DaemonSet{ObjectMeta: om("cg-ds"), Spec: appsv1.DaemonSetSpec{Selector: sel, Template: tmpl}})
	})
	t.Run("Role", func(t *testing.T) {
		crud(t, cs.RbacV1().Roles(ns), &rbacv1.Role{ObjectMeta: om("cg-role"), Rules: rules})
	})
	t.Run("ClusterRole", func(t *testing.T) {
		crud(t, cs.RbacV1().ClusterRoles(), &rbacv1.ClusterRole{ObjectMeta: om("cg-clusterrole"), Rules: rules})
	})
	t.Run("RoleBinding", func(t *testing.T) {
		crud(t, cs.RbacV1().RoleBindings(ns), &rbacv1.RoleBinding{ObjectMeta: om("cg-rb"), Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cg-role"}})
	})
	t.Run("ClusterRoleBinding", func(t *testing.T) {
		crud(t, cs.RbacV1().ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{ObjectMeta: om("cg-crb"), Subjects: subjects,
			RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"}})
	})
	jobTmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: podSpec.Containers}}
	t.Run("Job", func(t *testing.T) {
		crud(t, cs.BatchV1().Jobs(ns), &batchv1.Job{ObjectMeta: om("cg-job"), Spec: batchv1.JobSpec{Suspend: ptr.To(true), Template: jobTmpl}})
	})
	t.Run("CronJob", func(t *testing.T) {
		crud(t, cs.BatchV1().CronJobs(ns), &batchv1.CronJob{ObjectMeta: om("cg-cronjob"), Spec: batchv1.CronJobSpec{Schedule: "*/5 * * * *", Suspend: ptr.To(true),
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: jobTmpl}}}})
	})
	t.Run("PodDisruptionBudget", func(t *testing.T) {
		min := intstr.FromInt32(1)
		crud(t, cs.PolicyV1().PodDisruptionBudgets(ns), &policyv1.PodDisruptionBudget{ObjectMeta: om("cg-pdb"), Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: sel}})
	})
	t.Run("scale and status", func(t *testing.T) {
		ctx := context.Background()
		d, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: om("cg-scale"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, d.Name, metav1.GetOptions{})
			if err != nil || sc.Spec.Replicas != 1 || sc.Status.Selector != "app=cg" {
				return fmt.Errorf("get scale: %v %v", sc, err)
			}
			sc.Spec.Replicas = 0
			_, err = cs.AppsV1().Deployments(ns).UpdateScale(ctx, d.Name, sc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("update scale: %v", err)
		}
		if d, _ := cs.AppsV1().Deployments(ns).Get(ctx, d.Name, metav1.GetOptions{}); *d.Spec.Replicas != 0 {
			t.Fatalf("replicas after UpdateScale: %d", *d.Spec.Replicas)
		}
		// A StatefulSet scales through its kind's Scale as well.
		ss, err := cs.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: om("cg-scale"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), ServiceName: "cg", Selector: sel, Template: tmpl}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sc, err := cs.AppsV1().StatefulSets(ns).GetScale(ctx, ss.Name, metav1.GetOptions{})
			if err != nil || sc.Spec.Replicas != 3 || sc.Status.Selector != "app=cg" {
				return fmt.Errorf("get statefulset scale: %v %v", sc, err)
			}
			sc.Spec.Replicas = 1
			_, err = cs.AppsV1().StatefulSets(ns).UpdateScale(ctx, ss.Name, sc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("update statefulset scale: %v", err)
		}
		if ss, _ := cs.AppsV1().StatefulSets(ns).Get(ctx, ss.Name, metav1.GetOptions{}); *ss.Spec.Replicas != 1 {
			t.Fatalf("statefulset replicas after UpdateScale: %d", *ss.Spec.Replicas)
		}
		pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: om("cg-status"), Spec: podSpec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status.Phase, pod.Status.Message = corev1.PodPending, "set through pods/status"
		if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
		if p, _ := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{}); p.Status.Message != "set through pods/status" {
			t.Fatalf("status after UpdateStatus: %+v", p.Status)
		}
		if err := cs.CoreV1().Pods(ns).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}
