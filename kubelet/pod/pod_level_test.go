package pod

import (
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

func TestPodCgroupResources(t *testing.T) {
	for _, c := range []struct {
		name string
		res  *v1.ResourceRequirements
		want *runtime.PodResources
	}{
		{"none", nil, nil},
		{"limits 200m and 64Mi, requests defaulted to them",
			&v1.ResourceRequirements{Requests: map[string]string{"cpu": "200m", "memory": "64Mi"}, Limits: map[string]string{"cpu": "200m", "memory": "64Mi"}},
			&runtime.PodResources{CPUQuota: 20000, CPUPeriod: 100000, CPUShares: 204, MemoryLimit: 64 << 20}},
		{"a cpu request only: shares", &v1.ResourceRequirements{Requests: map[string]string{"cpu": "1"}}, &runtime.PodResources{CPUShares: 1024}},
		{"a tiny cpu limit: at least 1ms a period", &v1.ResourceRequirements{Limits: map[string]string{"cpu": "1m"}}, &runtime.PodResources{CPUQuota: 1000, CPUPeriod: 100000}},
		{"hugepages only: nothing for the cgroup", &v1.ResourceRequirements{Limits: map[string]string{"hugepages-2Mi": "4Mi"}}, nil},
	} {
		got := podCgroupResources(&v1.PodSpec{Resources: c.res})
		if (got == nil) != (c.want == nil) || got != nil && *got != *c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestUsernsAllocator: distinct blocks of 65536 from 65536 up, the same
// one again for the same pod (also for a new allocator over the same
// directories: a restarted kubelet), freed with the pod's directory.
func TestUsernsAllocator(t *testing.T) {
	dir := t.TempDir()
	a := &usernsAllocator{podsDir: dir, first: defaultUsernsFirstID, blocks: defaultUsernsLength / usernsLength}
	one, err := a.allocate("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	two, err := a.allocate("uid-2")
	if err != nil {
		t.Fatal(err)
	}
	if one.UIDs[0] != (runtime.IDMapping{HostID: 65536, ContainerID: 0, Length: 65536}) || two.UIDs[0].HostID != 131072 || two.GIDs[0] != two.UIDs[0] {
		t.Fatalf("mappings %+v and %+v", one, two)
	}
	again, err := (&usernsAllocator{podsDir: dir, first: defaultUsernsFirstID, blocks: 2}).allocate("uid-1")
	if err != nil || again.UIDs[0] != one.UIDs[0] {
		t.Fatalf("after a restart: %+v, %v", again, err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "uid-1")); err != nil {
		t.Fatal(err)
	}
	three, err := a.allocate("uid-3")
	if err != nil || three.UIDs[0].HostID != 65536 {
		t.Fatalf("a freed block is used again: %+v, %v", three, err)
	}
}
