package framework_test

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// TestResizedPodRequest: a resized pod holds the larger of its spec, its
// allocation and what it runs with.
func TestResizedPodRequest(t *testing.T) {
	pod := func(spec, allocated, actual string) *v1.Pod {
		p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: &v1.PodSpec{Containers: []*v1.Container{
			{Name: "c", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": spec, "memory": "64Mi"}}}}}}
		cs := &v1.ContainerStatus{Name: "c"}
		if allocated != "" {
			cs.AllocatedResources = map[string]string{"cpu": allocated}
		}
		if actual != "" {
			cs.Resources = &v1.ResourceRequirements{Requests: map[string]string{"cpu": actual}}
		}
		p.Status = &v1.PodStatus{ContainerStatuses: []*v1.ContainerStatus{cs}}
		return p
	}
	for _, c := range []struct {
		spec, allocated, actual string
		want                    int64
	}{
		{"500m", "", "", 500},
		{"900m", "500m", "500m", 900}, // a raise not yet admitted
		{"200m", "500m", "500m", 500}, // a lowering not yet applied
		{"200m", "200m", "500m", 500}, // admitted, not yet applied
	} {
		if got := framework.NewPodInfo(pod(c.spec, c.allocated, c.actual)).Request; got.MilliCPU != c.want || got.Memory != 64<<20 {
			t.Errorf("spec %s allocated %s actual %s: request %+v, want %dm cpu", c.spec, c.allocated, c.actual, got, c.want)
		}
	}
}

// TestPodLevelRequest: pod-level requests replace the containers' sum for
// cpu and memory; ephemeral storage stays the containers'.
func TestPodLevelRequest(t *testing.T) {
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: &v1.PodSpec{
		Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "2", "memory": "1Gi"}},
		Containers: []*v1.Container{
			{Name: "a", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m", "ephemeral-storage": "1Gi"}}},
			{Name: "b"},
		}}}
	got := framework.NewPodInfo(p).Request
	if got.MilliCPU != 2000 || got.Memory != 1<<30 || got.EphemeralStorage != 1<<30 {
		t.Errorf("request %+v, want 2000m cpu, 1Gi memory, 1Gi ephemeral storage", got)
	}
	// Only a memory request at pod level: cpu is the containers' sum.
	p.Spec.Resources = &v1.ResourceRequirements{Requests: map[string]string{"memory": "256Mi"}}
	if got := framework.NewPodInfo(p).Request; got.MilliCPU != 100 || got.Memory != 256<<20 {
		t.Errorf("request %+v, want 100m cpu and 256Mi memory", got)
	}
}
