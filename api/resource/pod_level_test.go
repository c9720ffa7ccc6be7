package resource

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func res(req, lim map[string]string) *v1.ResourceRequirements {
	return &v1.ResourceRequirements{Requests: req, Limits: lim}
}

// TestPodLevelQOS: with pod-level resources the class is theirs alone
// (Kubernetes' ComputePodQOS), whatever the containers say.
func TestPodLevelQOS(t *testing.T) {
	guaranteedCtr := []*v1.Container{{Name: "c", Resources: res(map[string]string{"cpu": "1", "memory": "1Gi"}, map[string]string{"cpu": "1", "memory": "1Gi"})}}
	for _, c := range []struct {
		name string
		pod  *v1.ResourceRequirements
		ctrs []*v1.Container
		want string
	}{
		{"cpu and memory limits equal to requests", res(map[string]string{"cpu": "200m", "memory": "64Mi"}, map[string]string{"cpu": "200m", "memory": "64Mi"}), []*v1.Container{{Name: "c"}}, "Guaranteed"},
		{"equal by value, not by text", res(map[string]string{"cpu": "1000m", "memory": "64Mi"}, map[string]string{"cpu": "1", "memory": "64Mi"}), nil, "Guaranteed"},
		{"memory limit only", res(map[string]string{"memory": "64Mi"}, map[string]string{"memory": "64Mi"}), guaranteedCtr, "Burstable"},
		{"requests below limits", res(map[string]string{"cpu": "100m", "memory": "64Mi"}, map[string]string{"cpu": "200m", "memory": "64Mi"}), nil, "Burstable"},
		{"requests only", res(map[string]string{"cpu": "100m"}, nil), nil, "Burstable"},
		{"only zero amounts", res(map[string]string{"cpu": "0"}, map[string]string{"memory": "0"}), guaranteedCtr, "BestEffort"},
		{"hugepages do not count", res(map[string]string{"hugepages-2Mi": "4Mi"}, map[string]string{"hugepages-2Mi": "4Mi"}), nil, "BestEffort"},
		{"no pod-level resources: the containers'", nil, guaranteedCtr, "Guaranteed"},
	} {
		if got := PodQOSClass(&v1.PodSpec{Resources: c.pod, Containers: c.ctrs}); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestAggregateContainerRequests: app containers and sidecars add up; a
// regular init container counts with the sidecars started before it.
func TestAggregateContainerRequests(t *testing.T) {
	cpu := func(name, v, policy string) *v1.Container {
		return &v1.Container{Name: name, RestartPolicy: policy, Resources: res(map[string]string{"cpu": v}, nil)}
	}
	for _, c := range []struct {
		name  string
		spec  *v1.PodSpec
		milli int64
	}{
		{"two app containers", &v1.PodSpec{Containers: []*v1.Container{cpu("a", "100m", ""), cpu("b", "200m", "")}}, 300},
		{"a larger init container", &v1.PodSpec{InitContainers: []*v1.Container{cpu("i", "1", "")}, Containers: []*v1.Container{cpu("a", "100m", "")}}, 1000},
		{"a sidecar adds to the apps", &v1.PodSpec{InitContainers: []*v1.Container{cpu("s", "50m", "Always")}, Containers: []*v1.Container{cpu("a", "100m", "")}}, 150},
		{"an init container after a sidecar runs with it", &v1.PodSpec{InitContainers: []*v1.Container{cpu("s", "500m", "Always"), cpu("i", "700m", "")},
			Containers: []*v1.Container{cpu("a", "100m", "")}}, 1200},
	} {
		if got := AggregateContainerRequests(c.spec)["cpu"]; got.MilliValue() != c.milli {
			t.Errorf("%s: %dm, want %dm", c.name, got.MilliValue(), c.milli)
		}
	}
}
