package kubeapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// testKubectlResize: kubectl patch --subresource resize changes a pod's
// container cpu and memory (strategic merge and JSON merge patch), PUT and
// GET of pods/resize work, a plain patch of the same change is refused as
// Kubernetes refuses it, a QoS change is refused with Kubernetes' text, a
// change of anything else through resize is dropped, the viewer may not
// resize, and discovery lists pods/resize.
func testKubectlResize(t *testing.T, e *env) {
	ctx := context.Background()
	pods := client.For[*v1.Pod](e.srv.Client)
	if _, err := pods.Create(ctx, &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "resized", Namespace: "default", Labels: map[string]string{"app": "resized"}},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox", Resources: &v1.ResourceRequirements{
			Requests: map[string]string{"cpu": "100m", "memory": "32Mi"}, Limits: map[string]string{"cpu": "200m", "memory": "64Mi"}}}}},
	}); err != nil {
		t.Fatal(err)
	}
	limits := func() map[string]string {
		p, err := pods.Get(ctx, "default", "resized")
		if err != nil {
			t.Fatal(err)
		}
		return p.Spec.Containers[0].Resources.Limits
	}
	e.kubectl(t, "patch", "pod", "resized", "--subresource", "resize", "-p", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"500m"}}}]}}`)
	if l := limits(); l["cpu"] != "500m" || l["memory"] != "64Mi" {
		t.Fatalf("after the strategic resize: limits %v", l)
	}
	// A merge patch replaces the list: the container is named in full.
	e.kubectl(t, "patch", "pod", "resized", "--subresource=resize", "--type=merge", "-p",
		`{"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m","memory":"32Mi"},"limits":{"cpu":"500m","memory":"128Mi"}}}]}}`)
	if l := limits(); l["memory"] != "128Mi" {
		t.Fatalf("after the merge resize: limits %v", l)
	}
	out, err := e.kubectlAs(t, e.admin, "", "patch", "pod", "resized", "-p", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}`)
	if err == nil || !strings.Contains(out, "pod updates may not change fields") {
		t.Errorf("a plain patch of resources: %v\n%s", err, out)
	}
	out, err = e.kubectlAs(t, e.admin, "", "patch", "pod", "resized", "--subresource", "resize", "-p",
		`{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m","memory":"128Mi"}}}]}}`)
	if err == nil || !strings.Contains(out, `The Pod "resized" is invalid: spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`) {
		t.Errorf("a resize to Guaranteed: %v\n%s", err, out)
	}
	// Anything but the resources is dropped, as Kubernetes' resize strategy does.
	e.kubectl(t, "patch", "pod", "resized", "--subresource", "resize", "-p", `{"metadata":{"labels":{"app":"other"}},"spec":{"activeDeadlineSeconds":5}}`)
	if p, _ := pods.Get(ctx, "default", "resized"); p.Metadata.Labels["app"] != "resized" || p.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("a resize changed labels %v or activeDeadlineSeconds %v", p.Metadata.Labels, p.Spec.ActiveDeadlineSeconds)
	}

	// GET and PUT of pods/resize.
	code, body := e.do(t, http.MethodGet, "/api/v1/namespaces/default/pods/resized/resize", "", nil)
	if code != http.StatusOK || !strings.Contains(body, `"128Mi"`) {
		t.Fatalf("GET resize: %d %s", code, body)
	}
	put := strings.Replace(body, `"128Mi"`, `"96Mi"`, 1)
	if code, body := e.do(t, http.MethodPut, "/api/v1/namespaces/default/pods/resized/resize", "application/json", []byte(put)); code != http.StatusOK {
		t.Fatalf("PUT resize: %d %s", code, body)
	}
	if l := limits(); l["memory"] != "96Mi" {
		t.Fatalf("after PUT: limits %v", l)
	}

	if out, _ := e.kubectlAs(t, e.view, "", "auth", "can-i", "patch", "pods", "--subresource=resize"); !strings.HasPrefix(out, "no") {
		t.Errorf("viewer can-i patch pods/resize: %s", out)
	}
	if out := e.kubectl(t, "auth", "can-i", "patch", "pods", "--subresource=resize"); !strings.HasPrefix(out, "yes") {
		t.Errorf("admin can-i patch pods/resize: %s", out)
	}
	if code, body := e.do(t, http.MethodGet, "/api/v1", "", nil); code != http.StatusOK || !strings.Contains(body, `"name":"pods/resize"`) {
		t.Errorf("discovery: %d, pods/resize listed: %v", code, strings.Contains(body, "pods/resize"))
	}
}
