package containerd

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/containerd/cgroups/v3/cgroup1/stats"
	v2 "github.com/containerd/cgroups/v3/cgroup2/stats"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/typeurl/v2"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// ContainerStats implements runtime.ContainerRuntime from the task's cgroup
// metrics (cgroup v1 or v2, as the shim reports them).
func (r *Runtime) ContainerStats(ctx context.Context, id string) (runtime.ContainerStats, error) {
	ctx = r.ns(ctx)
	ctr, _, err := r.loadContainer(ctx, id)
	if err != nil {
		return runtime.ContainerStats{}, err
	}
	task, err := ctr.Task(ctx, nil)
	if isNotFound(err) {
		return runtime.ContainerStats{}, fmt.Errorf("stats of container %s: %w", id, runtime.ErrNotRunning)
	}
	if err != nil {
		return runtime.ContainerStats{}, wrap(err, "stats of container %s", id)
	}
	if st, err := task.Status(ctx); err != nil || st.Status != client.Running {
		return runtime.ContainerStats{}, fmt.Errorf("stats of container %s: %w", id, runtime.ErrNotRunning)
	}
	m, err := task.Metrics(ctx)
	if err != nil {
		return runtime.ContainerStats{}, wrap(err, "stats of container %s", id)
	}
	s, _, err := decodeMetrics(m.Data)
	if err != nil {
		return runtime.ContainerStats{}, fmt.Errorf("stats of container %s: %w", id, err)
	}
	s.Timestamp = time.Now()
	if m.Timestamp != nil {
		s.Timestamp = m.Timestamp.AsTime()
	}
	// The writable layer: the snapshotter's usage of the container's
	// active snapshot (containerd CRI's writable_layer reads the same).
	if info, err := ctr.Info(ctx, client.WithoutRefreshedMetadata); err == nil && info.SnapshotKey != "" {
		u, err := r.client.SnapshotService(info.Snapshotter).Usage(ctx, info.SnapshotKey)
		if err != nil {
			return runtime.ContainerStats{}, wrap(err, "stats of container %s: writable layer", id)
		}
		s.WritableLayerBytes = uint64(max(u.Size, 0))
	}
	return s, nil
}

// decodeMetrics reads usage and the OOM-kill count from the shim's cgroup
// metrics.
func decodeMetrics(data typeurl.Any) (runtime.ContainerStats, uint64, error) {
	if data == nil {
		return runtime.ContainerStats{}, 0, fmt.Errorf("no metrics")
	}
	v, err := typeurl.UnmarshalAny(data)
	if err != nil {
		return runtime.ContainerStats{}, 0, fmt.Errorf("metrics: %w", err)
	}
	var s runtime.ContainerStats
	var ooms uint64
	switch m := v.(type) {
	case *v1.Metrics:
		s.CPUUsageNanos = m.GetCPU().GetUsage().GetTotal()
		s.MemoryUsageBytes = m.GetMemory().GetUsage().GetUsage()
		s.MemoryWorkingSetBytes = workingSet(s.MemoryUsageBytes, m.GetMemory().GetTotalInactiveFile())
		ooms = m.GetMemoryOomControl().GetOomKill()
	case *v2.Metrics:
		s.CPUUsageNanos = m.GetCPU().GetUsageUsec() * 1000
		s.MemoryUsageBytes = m.GetMemory().GetUsage()
		s.MemoryWorkingSetBytes = workingSet(s.MemoryUsageBytes, m.GetMemory().GetInactiveFile())
		ooms = m.GetMemoryEvents().GetOomKill()
	default:
		return runtime.ContainerStats{}, 0, fmt.Errorf("metrics: unexpected type %T", v)
	}
	return s, ooms, nil
}

func workingSet(usage, inactiveFile uint64) uint64 {
	if usage < inactiveFile {
		return 0
	}
	return usage - inactiveFile
}

// oomKilled reports whether the kernel OOM-killed a process in the
// container's cgroup. It asks the shim (the task must not be deleted yet),
// and falls back to the cgroup files.
func (r *Runtime) oomKilled(ctx context.Context, task client.Task, cgroupsPath string) bool {
	if m, err := task.Metrics(ctx); err == nil {
		if _, ooms, err := decodeMetrics(m.Data); err == nil {
			return ooms > 0
		}
	}
	return cgroupOOMKills(cgroupsPath) > 0
}

// cgroupOOMKills reads the oom_kill count of a cgroup (v1 memory controller
// or v2), 0 if unreadable.
func cgroupOOMKills(cgroupsPath string) uint64 {
	if cgroupsPath == "" {
		return 0
	}
	for _, f := range []string{
		filepath.Join("/sys/fs/cgroup/memory", cgroupsPath, "memory.oom_control"),
		filepath.Join("/sys/fs/cgroup", cgroupsPath, "memory.events"),
	} {
		if n, ok := readKeyedUint(f, "oom_kill"); ok {
			return n
		}
	}
	return 0
}

func readKeyedUint(path, key string) (uint64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), " ")
		if ok && k == key {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
