package kubelet_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// cgroupLimits reads the container's cgroup cpu quota and memory limit
// (cgroup v2 cpu.max and memory.max, or v1's cpu.cfs_quota_us and
// memory.limit_in_bytes): from inside it when it has its own cgroup
// namespace and mount (the CRI backend's), else from the host at the path
// its /proc/self/cgroup names (the native backend mounts no cgroup
// filesystem in the container; the test runs as root on the node's host).
func cgroupLimits(t *testing.T, c *client.Client, ns, pod string) string {
	t.Helper()
	out, code := execIn(t, c, ns, pod, "sh", "-c", `if [ -f /sys/fs/cgroup/cpu.max ]; then cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max
elif [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/memory/memory.limit_in_bytes
else echo host; cat /proc/self/cgroup; fi`)
	if code != 0 {
		t.Fatalf("reading the cgroup: exit %d: %s", code, out)
	}
	if !strings.HasPrefix(out, "host\n") {
		return strings.Join(strings.Fields(out), " ")
	}
	paths := map[string]string{} // controller -> path
	for _, l := range strings.Split(strings.TrimPrefix(out, "host\n"), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			paths[ctl] = parts[2]
		}
	}
	read := func(files ...string) string {
		var vals []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return ""
			}
			vals = append(vals, strings.Fields(string(b))...)
		}
		return strings.Join(vals, " ")
	}
	if p, ok := paths[""]; ok {
		if v := read(filepath.Join("/sys/fs/cgroup", p, "cpu.max"), filepath.Join("/sys/fs/cgroup", p, "memory.max")); v != "" {
			return v
		}
	}
	if v := read(filepath.Join("/sys/fs/cgroup/cpu", paths["cpu"], "cpu.cfs_quota_us"), filepath.Join("/sys/fs/cgroup/memory", paths["memory"], "memory.limit_in_bytes")); v != "" {
		return v
	}
	t.Fatalf("no cgroup files on the host for the container's cgroups:\n%s", out)
	return ""
}

// TestInPlaceResize: raising a running container's cpu and memory limits
// through pods/resize changes its cgroup in place (the same container,
// restartCount 0), the status reports the new resources and allocation
// and no resize condition is left; a resize the node cannot hold is
// PodResizePending Infeasible and changes nothing.
func TestInPlaceResize(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "resize", "grow"
	p := busyboxPod(ns, name, "node1", "sleep 3600")
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{
		Requests: map[string]string{"cpu": "100m", "memory": "32Mi"},
		Limits:   map[string]string{"cpu": "200m", "memory": "64Mi"},
	}
	createPod(t, c.Client, p)
	p = waitPod(t, c.Client, ns, name, 60*time.Second, "Running with its resources reported", func(p *v1.Pod) bool {
		return running(p) && containerStatus(p, "main").GetResources() != nil
	})
	before := containerStatus(p, "main")
	v2 := cgroupLimits(t, c.Client, ns, name)
	quota, mem := "20000", "67108864"
	if strings.HasPrefix(v2, "20000 100000") {
		quota = "20000 100000"
	}
	if v2 != quota+" "+mem {
		t.Fatalf("cgroup before: %q, want %q", v2, quota+" "+mem)
	}

	ctx := ctxFor(t, time.Minute)
	next := proto.Clone(p).(*v1.Pod)
	next.Spec.Containers[0].Resources.Limits = map[string]string{"cpu": "500m", "memory": "128Mi"}
	if _, err := c.Client.Resize(ctx, next); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, c.Client, ns, name, 60*time.Second, "resized", func(p *v1.Pod) bool {
		l := containerStatus(p, "main").GetResources().GetLimits()
		return l["cpu"] == "500m" && l["memory"] == "128Mi" && condition(p, "PodResizeInProgress") == nil
	})
	after := containerStatus(p, "main")
	if after.RestartCount != 0 || after.ContainerId != before.ContainerId {
		t.Errorf("restarted by the resize: restartCount %d, container %s then %s", after.RestartCount, before.ContainerId, after.ContainerId)
	}
	if after.AllocatedResources["cpu"] != "100m" || after.AllocatedResources["memory"] != "32Mi" {
		t.Errorf("allocatedResources %v", after.AllocatedResources)
	}
	want := strings.Replace(quota, "20000", "50000", 1) + " 134217728"
	if got := cgroupLimits(t, c.Client, ns, name); got != want {
		t.Errorf("cgroup after: %q, want %q", got, want)
	}

	// More cpu than the node has: Infeasible, and nothing changes.
	big := proto.Clone(p).(*v1.Pod)
	big.Spec.Containers[0].Resources.Requests["cpu"] = "64"
	big.Spec.Containers[0].Resources.Limits["cpu"] = "64"
	if _, err := c.Client.Resize(ctx, big); err != nil {
		t.Fatal(err)
	}
	p = waitPod(t, c.Client, ns, name, 30*time.Second, "PodResizePending Infeasible", func(p *v1.Pod) bool {
		cond := condition(p, "PodResizePending")
		return cond.GetStatus() == "True" && cond.GetReason() == "Infeasible"
	})
	if msg := condition(p, "PodResizePending").GetMessage(); !strings.HasPrefix(msg, "Node didn't have enough capacity: cpu, requested: 64000, capacity: ") {
		t.Errorf("PodResizePending message %q", msg)
	}
	if cs := containerStatus(p, "main"); cs.AllocatedResources["cpu"] != "100m" || cs.GetResources().GetLimits()["cpu"] != "500m" || cs.RestartCount != 0 {
		t.Errorf("after the infeasible resize: allocated %v resources %v restarts %d", cs.AllocatedResources, cs.GetResources(), cs.RestartCount)
	}
	if got := cgroupLimits(t, c.Client, ns, name); got != want {
		t.Errorf("cgroup after the infeasible resize: %q, want %q", got, want)
	}
}
