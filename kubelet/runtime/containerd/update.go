package containerd

import (
	"context"
	"fmt"

	"github.com/containerd/containerd/v2/client"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// UpdateContainerResources implements runtime.ContainerRuntime with the
// task's Update (runc update on the container's cgroup: cpu quota over
// the same 100ms period, shares, the memory limit and, where swap is
// accounted, the same swap limit as at create). The container's stored
// spec keeps its create-time values: the task is what runs, and a
// container is never started twice.
func (r *Runtime) UpdateContainerResources(ctx context.Context, id string, res runtime.Resources) error {
	ctx = r.ns(ctx)
	ctr, _, err := r.loadContainer(ctx, id)
	if err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	if isNotFound(err) {
		return fmt.Errorf("update resources of container %s: %w", id, runtime.ErrNotRunning)
	}
	if err != nil {
		return wrap(err, "update resources of container %s", id)
	}
	if err := task.Update(ctx, client.WithResources(linuxResources(res))); err != nil {
		return wrap(err, "update resources of container %s", id)
	}
	return nil
}

// linuxResources are res as OCI cgroup settings, as spec.go sets them at
// create.
func linuxResources(res runtime.Resources) *specs.LinuxResources {
	out := &specs.LinuxResources{CPU: &specs.LinuxCPU{}, Memory: &specs.LinuxMemory{}}
	if res.MemoryLimitBytes > 0 {
		lim := res.MemoryLimitBytes
		out.Memory.Limit = &lim
		if swapAccounted() {
			out.Memory.Swap = &lim
		}
	}
	if res.CPULimitMilli > 0 {
		quota, period := max(res.CPULimitMilli*cfsPeriod/1000, 1000), uint64(cfsPeriod)
		out.CPU.Quota, out.CPU.Period = &quota, &period
	}
	if res.CPURequestMilli > 0 {
		shares := uint64(max(res.CPURequestMilli*1024/1000, 2))
		out.CPU.Shares = &shares
	}
	return out
}
