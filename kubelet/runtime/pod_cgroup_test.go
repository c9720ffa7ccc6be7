package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestApplyPodCgroupV1: on cgroup v1 the cpu and memory hierarchies get
// the pod's directory and its limits (a tree under a temp dir).
func TestApplyPodCgroupV1(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cpu,cpuacct", "memory", "pids"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &PodResources{CPUQuota: 20000, CPUPeriod: 100000, CPUShares: 204, MemoryLimit: 64 << 20}
	if err := applyPodCgroup(root, "/tugboat/podabc", r); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cpu,cpuacct/tugboat/podabc/cpu.cfs_quota_us":  "20000",
		"cpu,cpuacct/tugboat/podabc/cpu.cfs_period_us": "100000",
		"cpu,cpuacct/tugboat/podabc/cpu.shares":        "204",
		"memory/tugboat/podabc/memory.limit_in_bytes":  "67108864",
	} {
		if got := read(t, filepath.Join(root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "pids/tugboat")); err == nil {
		t.Error("a hierarchy with nothing to set got a directory")
	}
}

// TestApplyPodCgroupV2: on the unified tree cpu and memory are handed
// down and cpu.max, cpu.weight and memory.max written.
func TestApplyPodCgroupV2(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpu memory"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &PodResources{CPUQuota: 20000, CPUShares: 204, MemoryLimit: 64 << 20}
	if err := applyPodCgroup(root, "/tugboat/podabc", r); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cgroup.subtree_control":         "+cpu +memory",
		"tugboat/cgroup.subtree_control": "+cpu +memory",
		"tugboat/podabc/cpu.max":         "20000 100000",
		"tugboat/podabc/cpu.weight":      "8",
		"tugboat/podabc/memory.max":      "67108864",
	} {
		if got := read(t, filepath.Join(root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestApplyPodCgroupNothing(t *testing.T) {
	root := t.TempDir()
	if err := applyPodCgroup(root, "/tugboat/p", nil); err != nil {
		t.Fatal(err)
	}
	if err := applyPodCgroup(root, "/tugboat/p", &PodResources{MemoryLimit: 1}); err == nil || !strings.Contains(err.Error(), "no memory cgroup hierarchy") {
		t.Errorf("no hierarchy: %v", err)
	}
}
