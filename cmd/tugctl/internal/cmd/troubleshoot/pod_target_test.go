package troubleshoot

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestPodRank(t *testing.T) {
	pod := func(name, node, phase string, ready bool) *v1.Pod {
		p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"}, Spec: &v1.PodSpec{NodeName: node}}
		p.Status = &v1.PodStatus{Phase: phase}
		if ready {
			p.Status.Conditions = []*v1.Condition{{Type: "Ready", Status: "True"}}
		}
		return p
	}
	tests := []struct {
		name string
		a, b *v1.Pod
	}{
		{"scheduled first", pod("z", "n1", "Pending", false), pod("a", "", "Pending", false)},
		{"running before pending", pod("z", "n1", "Running", false), pod("a", "n1", "Pending", false)},
		{"pending before failed", pod("z", "n1", "Pending", false), pod("a", "n1", "Failed", false)},
		{"ready first", pod("z", "n1", "Running", true), pod("a", "n1", "Running", false)},
		{"then by name", pod("a", "n1", "Running", true), pod("b", "n1", "Running", true)},
	}
	for _, tc := range tests {
		if !podRank(tc.a, tc.b) || podRank(tc.b, tc.a) {
			t.Errorf("%s: want %s before %s", tc.name, tc.a.Metadata.Name, tc.b.Metadata.Name)
		}
	}
}
