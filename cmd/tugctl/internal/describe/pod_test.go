package describe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// TestDescribePodLevelResources: a pod's spec.resources are shown as
// kubectl shows them, "Resources:" with limits then requests after the
// pod's IP (and NominatedNodeName) and before its containers; a pod
// without them has no such block.
func TestDescribePodLevelResources(t *testing.T) {
	pod := func(r *v1.ResourceRequirements) *v1.Pod {
		return &v1.Pod{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: &v1.PodSpec{Resources: r, Containers: []*v1.Container{{Name: "app", Image: "busybox",
				Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}}}}},
			Status: &v1.PodStatus{Phase: "Pending", NominatedNodeName: "n2"}}
	}
	describe := func(p *v1.Pod) string {
		var buf bytes.Buffer
		d := newDescriber(&buf, nil, false)
		if err := describePod(context.Background(), d, p); err != nil {
			t.Fatal(err)
		}
		if err := d.flush(); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	got := describe(pod(&v1.ResourceRequirements{
		Limits:   map[string]string{"memory": "256Mi", "cpu": "1"},
		Requests: map[string]string{"memory": "128Mi", "cpu": "500m"},
	}))
	want := "NominatedNodeName:  n2\n" +
		"Resources:\n" +
		"  Limits:\n    cpu:     1\n    memory:  256Mi\n" +
		"  Requests:\n    cpu:     500m\n    memory:  128Mi\n" +
		"Containers:\n"
	if !strings.Contains(got, want) {
		t.Errorf("describe pod:\n%s\nlacks\n%s", got, want)
	}
	if !strings.Contains(got, "    Requests:\n      cpu:        100m\n") {
		t.Errorf("the container's own requests are gone:\n%s", got)
	}
	got = describe(pod(&v1.ResourceRequirements{Requests: map[string]string{"cpu": "250m"}}))
	if want := "Resources:\n  Requests:\n    cpu:  250m\nContainers:\n"; !strings.Contains(got, want) {
		t.Errorf("requests only:\n%s\nlacks\n%s", got, want)
	}
	if got := describe(pod(nil)); strings.Contains(got, "\nResources:") {
		t.Errorf("a pod without pod-level resources:\n%s", got)
	}
}
