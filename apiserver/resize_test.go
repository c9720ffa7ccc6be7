package apiserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// TestResizeSubresource: through the gRPC door, pods/resize takes only the
// containers' cpu and memory (Update and Patch), keeps the rest as stored,
// refuses a QoS change and other resources, and a plain update still may
// not change resources.
func TestResizeSubresource(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := context.Background()
	pods := client.For[*v1.Pod](s.Client)
	p, err := pods.Create(ctx, &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "r", Namespace: "default"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox", Resources: &v1.ResourceRequirements{
			Requests: map[string]string{"cpu": "100m", "memory": "32Mi"}, Limits: map[string]string{"cpu": "200m", "memory": "64Mi"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.QosClass != "Burstable" || len(p.Spec.Containers[0].ResizePolicy) != 2 {
		t.Fatalf("created: qos %q resizePolicy %v", p.Status.QosClass, p.Spec.Containers[0].ResizePolicy)
	}

	want := p.Spec.Containers[0].Resources
	want.Limits["cpu"] = "400m"
	p.Spec.Containers[0].Image = "nginx" // dropped by the resize
	out, err := s.Client.Resize(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if c := out.Spec.Containers[0]; c.Resources.Limits["cpu"] != "400m" || c.Image != "busybox" {
		t.Fatalf("after Resize: limits %v image %s", c.Resources.Limits, c.Image)
	}
	if out.Metadata.Generation != p.Metadata.Generation+1 {
		t.Errorf("generation %d, want %d", out.Metadata.Generation, p.Metadata.Generation+1)
	}

	out, err = pods.Patch(ctx, "default", "r", "strategic", []byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":"128Mi"}}}]}}`), client.PatchOptions{Subresource: "resize"})
	if err != nil {
		t.Fatal(err)
	}
	if l := out.Spec.Containers[0].Resources.Limits; l["memory"] != "128Mi" || l["cpu"] != "400m" {
		t.Fatalf("after the patch: %v", l)
	}
	if _, err := s.Client.Objects().Get(ctx, &v1.GetRequest{Kind: "Pod", Namespace: "default", Name: "r", Subresource: "resize"}); err != nil {
		t.Errorf("Get resize: %v", err)
	}

	for _, c := range []struct{ name, patch, want string }{
		{"qos", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"400m","memory":"128Mi"}}}]}}`,
			`spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`},
		{"ephemeral-storage", `{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`,
			"spec: Forbidden: only cpu and memory resources are mutable"},
		{"limit removed", `{"spec":{"containers":[{"name":"c","resources":{"limits":{"memory":null}}}]}}`,
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
	} {
		if _, err := pods.Patch(ctx, "default", "r", "strategic", []byte(c.patch), client.PatchOptions{Subresource: "resize"}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := pods.Patch(ctx, "default", "r", "strategic", []byte(`{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1"}}}]}}`), client.PatchOptions{}); err == nil || !strings.Contains(err.Error(), "pod updates may not change fields") {
		t.Errorf("a plain patch of resources: %v", err)
	}
	if _, err := client.For[*v1.Service](s.Client).Patch(ctx, "default", "kubernetes", "merge", []byte(`{}`), client.PatchOptions{Subresource: "resize"}); err == nil || !strings.Contains(err.Error(), "services have no resize subresource") {
		t.Errorf("resize of a service: %v", err)
	}
}
