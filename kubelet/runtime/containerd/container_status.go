package containerd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	tasksapi "github.com/containerd/containerd/api/services/tasks/v1"
	tasktypes "github.com/containerd/containerd/api/types/task"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/errdefs"
	"github.com/containerd/errdefs/pkg/errgrpc"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// ContainerStatus implements runtime.ContainerRuntime.
func (r *Runtime) ContainerStatus(ctx context.Context, id string) (runtime.ContainerStatus, error) {
	ctx = r.ns(ctx)
	rec, err := r.client.ContainerService().Get(ctx, id)
	if err != nil {
		return runtime.ContainerStatus{}, wrap(err, "container %s", id)
	}
	if rec.Labels[labelKind] != kindContainer {
		return runtime.ContainerStatus{}, fmt.Errorf("container %s: not a container: %w", id, runtime.ErrNotFound)
	}
	proc, err := r.taskProcess(ctx, id)
	if err != nil {
		return runtime.ContainerStatus{}, err
	}
	return r.statusOf(ctx, rec, proc)
}

// taskProcess returns the process of the container's task, nil if it has
// none. One shim RPC.
func (r *Runtime) taskProcess(ctx context.Context, id string) (*tasktypes.Process, error) {
	resp, err := r.client.TaskService().Get(ctx, &tasksapi.GetRequest{ContainerID: id})
	switch err = errgrpc.ToNative(err); {
	case err == nil:
		return resp.Process, nil
	case errdefs.IsNotFound(err):
		return nil, nil
	default:
		return nil, wrap(err, "container %s: task", id)
	}
}

// taskGetMax is the most containers ListContainers asks about one task at
// a time; above it, one task List is cheaper. containerd 1.6 answers a
// task List by asking every task's shim, so for a pod's few containers on
// a node with many, a Get each is far less work.
const taskGetMax = 8

// ListContainers implements runtime.ContainerRuntime. It costs one RPC for
// the containers, then a task Get each (up to taskGetMax containers) or
// one task List, plus one per container whose exit is recorded.
func (r *Runtime) ListContainers(ctx context.Context, f runtime.ContainerFilter) ([]runtime.ContainerStatus, error) {
	ctx = r.ns(ctx)
	clauses := []string{labelFilter(labelKind, kindContainer)}
	if f.ID != "" {
		clauses = append(clauses, "id=="+strconv.Quote(f.ID))
	}
	if f.SandboxID != "" {
		clauses = append(clauses, labelFilter(labelSandboxID, f.SandboxID))
	}
	if f.PodUID != "" {
		clauses = append(clauses, labelFilter(labelPodUID, f.PodUID))
	}
	for k, v := range f.Labels {
		clauses = append(clauses, labelFilter(k, v))
	}
	recs, err := r.client.ContainerService().List(ctx, filterExpr(clauses...))
	if err != nil {
		return nil, wrap(err, "list containers")
	}
	if len(recs) == 0 {
		return nil, nil
	}
	procs := make(map[string]*tasktypes.Process, len(recs))
	if len(recs) <= taskGetMax {
		for _, rec := range recs {
			p, err := r.taskProcess(ctx, rec.ID)
			if err != nil {
				return nil, err
			}
			procs[rec.ID] = p
		}
	} else {
		resp, err := r.client.TaskService().List(ctx, &tasksapi.ListTasksRequest{})
		if err != nil {
			return nil, wrap(errgrpc.ToNative(err), "list tasks")
		}
		for _, t := range resp.Tasks {
			procs[t.ID] = t
		}
	}
	out := make([]runtime.ContainerStatus, 0, len(recs))
	for _, rec := range recs {
		st, err := r.statusOf(ctx, rec, procs[rec.ID])
		if isNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		if f.State != "" && st.State != f.State {
			continue
		}
		out = append(out, st)
	}
	return out, nil
}

// statusOf builds a container's status from its record and its task's
// process (nil if it has no task). An exited task is reaped first.
func (r *Runtime) statusOf(ctx context.Context, rec containers.Container, proc *tasktypes.Process) (runtime.ContainerStatus, error) {
	labels := rec.Labels
	if labels[labelExitCode] == "" {
		stopped := proc != nil && proc.Status == tasktypes.Status_STOPPED
		lost := proc == nil && labels[labelStartedAt] != ""
		if stopped || lost {
			var err error
			if labels, err = r.reap(ctx, rec.ID); err != nil {
				return runtime.ContainerStatus{}, err
			}
		}
	}
	st := runtime.ContainerStatus{
		ID:        rec.ID,
		SandboxID: labels[labelSandboxID],
		Pod:       podFromLabels(labels),
		Name:      labels[labelContainerName],
		Attempt:   parseUint32(labels[labelAttempt]),
		Image:     rec.Image,
		ImageID:   labels[labelImageID],
		CreatedAt: rec.CreatedAt,
		StartedAt: parseTime(labels[labelStartedAt]),
		LogPath:   labels[labelLogPath],
		Labels:    userLabels(labels),
		State:     runtime.ContainerCreated,
	}
	if code := labels[labelExitCode]; code != "" {
		st.State = runtime.ContainerExited
		st.ExitCode, _ = strconv.Atoi(code)
		st.FinishedAt = parseTime(labels[labelFinishedAt])
		st.Reason = labels[labelReason]
		st.Message = labels[labelMessage]
		return st, nil
	}
	if proc != nil {
		switch proc.Status {
		case tasktypes.Status_RUNNING:
			st.State, st.PID = runtime.ContainerRunning, proc.Pid
		case tasktypes.Status_CREATED:
			st.State = runtime.ContainerCreated
		default: // paused, pausing, unknown, or stopped and reaped concurrently
			st.State = runtime.ContainerUnknown
		}
	}
	return st, nil
}

// reap records the exit of a container whose task has stopped (or is lost)
// in its labels, then deletes the task, which ends its shim. It returns the
// labels as they are afterwards.
func (r *Runtime) reap(ctx context.Context, id string) (map[string]string, error) {
	unlock := r.locks.lock(id)
	defer unlock()

	ctr, labels, err := r.loadContainer(ctx, id)
	if err != nil {
		return nil, err
	}
	if labels[labelExitCode] != "" {
		return labels, nil // reaped by someone else meanwhile
	}
	var exit map[string]string
	task, err := ctr.Task(ctx, nil)
	switch {
	case errdefs.IsNotFound(err):
		if labels[labelStartedAt] == "" {
			return labels, nil // never started
		}
		exit = map[string]string{
			labelExitCode:   "255",
			labelReason:     runtime.ReasonUnknown,
			labelMessage:    "the container's task is gone: containerd or the node restarted while it ran",
			labelFinishedAt: formatTime(time.Now()),
		}
	case err != nil:
		return nil, wrap(err, "container %s: task", id)
	default:
		st, err := task.Status(ctx)
		if err != nil {
			return nil, wrap(err, "container %s: task status", id)
		}
		if st.Status != client.Stopped {
			return labels, nil
		}
		reason := runtime.ReasonCompleted
		if st.ExitStatus != 0 {
			reason = runtime.ReasonError
		}
		if r.oomKilled(ctx, task, labels[labelCgroupsPath]) {
			reason = runtime.ReasonOOMKilled
		}
		finished := st.ExitTime
		if finished.IsZero() {
			finished = time.Now()
		}
		exit = map[string]string{
			labelExitCode:   strconv.FormatUint(uint64(st.ExitStatus), 10),
			labelReason:     reason,
			labelFinishedAt: formatTime(finished),
		}
	}
	if err := r.setLabels(ctx, id, exit); err != nil {
		return nil, wrap(err, "container %s: record exit", id)
	}
	if task != nil {
		if _, err := task.Delete(ctx); err != nil && !errdefs.IsNotFound(err) {
			r.logger.Warn("deleting exited task", "container", id, "err", err)
		}
	}
	for k, v := range exit {
		labels[k] = v
	}
	r.logger.Debug("container exited", "container", id, "exitCode", exit[labelExitCode], "reason", exit[labelReason])
	return labels, nil
}
