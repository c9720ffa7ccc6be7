package cri

import (
	"context"
	"fmt"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// ContainerStats implements runtime.ContainerRuntime from the runtime's
// ContainerStats (its cgroup readings); ErrNotRunning for a container
// that is not running.
func (r *Runtime) ContainerStats(ctx context.Context, id string) (runtime.ContainerStats, error) {
	if err := r.requireRunning(ctx, id, "stats"); err != nil {
		return runtime.ContainerStats{}, err
	}
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.ContainerStats(ctx, &cri.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return runtime.ContainerStats{}, wrap(err, "stats of container %s", id)
	}
	return containerStats(resp.GetStats()), nil
}

// ListContainerStats returns the stats of every running container
// carrying labels, by container ID, in one call (for `tugctl top` and the
// eviction manager on a busy node).
func (r *Runtime) ListContainerStats(ctx context.Context, labels map[string]string) (map[string]runtime.ContainerStats, error) {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.ListContainerStats(ctx, &cri.ListContainerStatsRequest{Filter: &cri.ContainerStatsFilter{LabelSelector: copyLabels(labels)}})
	if err != nil {
		return nil, wrap(err, "list container stats")
	}
	out := make(map[string]runtime.ContainerStats, len(resp.Stats))
	for _, s := range resp.Stats {
		out[s.GetAttributes().GetId()] = containerStats(s)
	}
	return out, nil
}

func containerStats(s *cri.ContainerStats) runtime.ContainerStats {
	st := runtime.ContainerStats{
		CPUUsageNanos:         s.GetCpu().GetUsageCoreNanoSeconds().GetValue(),
		MemoryUsageBytes:      s.GetMemory().GetUsageBytes().GetValue(),
		MemoryWorkingSetBytes: s.GetMemory().GetWorkingSetBytes().GetValue(),
		WritableLayerBytes:    s.GetWritableLayer().GetUsedBytes().GetValue(),
	}
	if ts := s.GetCpu().GetTimestamp(); ts > 0 {
		st.Timestamp = time.Unix(0, ts)
	} else {
		st.Timestamp = time.Now()
	}
	return st
}

// PodStats is one pod sandbox's cgroup usage, as ListPodSandboxStats
// reports it: the whole pod, its pause container included.
type PodStats struct {
	SandboxID string
	Pod       runtime.PodRef
	runtime.ContainerStats
}

// ListPodSandboxStats returns the usage of the ready sandboxes carrying
// labels.
func (r *Runtime) ListPodSandboxStats(ctx context.Context, labels map[string]string) ([]PodStats, error) {
	ctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rs.ListPodSandboxStats(ctx, &cri.ListPodSandboxStatsRequest{Filter: &cri.PodSandboxStatsFilter{LabelSelector: copyLabels(labels)}})
	if err != nil {
		return nil, wrap(err, "list pod sandbox stats")
	}
	out := make([]PodStats, 0, len(resp.Stats))
	for _, s := range resp.Stats {
		md := s.GetAttributes().GetMetadata()
		lin := s.GetLinux()
		cs := runtime.ContainerStats{
			Timestamp:             time.Unix(0, lin.GetCpu().GetTimestamp()),
			CPUUsageNanos:         lin.GetCpu().GetUsageCoreNanoSeconds().GetValue(),
			MemoryUsageBytes:      lin.GetMemory().GetUsageBytes().GetValue(),
			MemoryWorkingSetBytes: lin.GetMemory().GetWorkingSetBytes().GetValue(),
		}
		out = append(out, PodStats{
			SandboxID:      s.GetAttributes().GetId(),
			Pod:            runtime.PodRef{Namespace: md.GetNamespace(), Name: md.GetName(), UID: md.GetUid()},
			ContainerStats: cs,
		})
	}
	return out, nil
}

// UpdateContainerResources implements runtime.ContainerRuntime with the
// CRI's UpdateContainerResources (the runtime rewrites the container's
// cgroup and its recorded spec, so a restart of the runtime keeps them).
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res runtime.Resources) error {
	st, err := r.ContainerStatus(ctx, id)
	if err != nil {
		return err
	}
	if st.State == runtime.ContainerExited {
		return fmt.Errorf("update resources of container %s: %w", id, runtime.ErrNotRunning)
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rs.UpdateContainerResources(cctx, &cri.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources(res)}); err != nil {
		return wrap(err, "update resources of container %s", id)
	}
	return nil
}
