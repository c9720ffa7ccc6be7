package pod

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/quota"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// In-place resize (pods/resize), as Kubernetes' kubelet does it since
// 1.33:
//
//   - Allocation. The Manager keeps, per pod, the resources it admitted
//     for each container (allocation). A pod's first sync allocates its
//     spec. When the spec's resources later differ (a resize), the
//     Manager admits the new ones against the node: the node's
//     allocatable cpu and memory less what the other pods of the node are
//     allocated. A request above the node's allocatable is Infeasible, one
//     that fits the node but not beside the others Deferred (retried every
//     sync, so it goes ahead once others shrink or leave): the pod's
//     PodResizePending condition says which and why, and the containers
//     keep running with what they were allocated. Containers are created
//     with their allocation, never with an unadmitted spec.
//   - Actuation. A running container whose allocation differs from what it
//     was last given (applied, by container ID) is updated in place with
//     runtime.UpdateContainerResources, or — when a changed resource's
//     resizePolicy is RestartContainer — killed and restarted with the new
//     allocation (killResize). A memory limit below the container's
//     current usage is not applied (Kubernetes 1.34+). Until every running
//     container runs with its allocation the pod's PodResizeInProgress
//     condition is True (reason Error, with the message, if applying
//     failed).
//   - Status. containerStatuses[].allocatedResources are the allocated
//     requests, .resources what the container runs with. The scheduler
//     counts the larger of spec, allocated and actual (framework).
//
// The kubelet manages no pod-level cgroup limits (the pod's cgroup is only
// the containers' parent), so there is nothing to resize above them.

// Resize conditions and reasons (Kubernetes' core/v1 names).
const (
	CondPodResizePending    = "PodResizePending"
	CondPodResizeInProgress = "PodResizeInProgress"
	ReasonInfeasible        = "Infeasible"
	ReasonDeferred          = "Deferred"
	ReasonResizeError       = "Error"
	killResize              = "resize"
)

// allocation is the resources admitted for each container of a pod, by
// name.
type allocation map[string]*v1.ResourceRequirements

func specAllocation(pod *v1.Pod) allocation {
	a := allocation{}
	for _, c := range append(append([]*v1.Container{}, pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...) {
		if r := c.GetResources(); r != nil {
			a[c.Name] = proto.Clone(r).(*v1.ResourceRequirements)
		} else {
			a[c.Name] = nil
		}
	}
	return a
}

func (a allocation) equal(b allocation) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !proto.Equal(v, w) {
			return false
		}
	}
	return true
}

// container is c with its allocated resources.
func (a allocation) container(c *v1.Container) *v1.Container {
	r, ok := a[c.Name]
	if !ok || proto.Equal(r, c.GetResources()) {
		return c
	}
	out := proto.Clone(c).(*v1.Container)
	out.Resources = r
	return out
}

// requests are the pod's effective requests under allocation a.
func (a allocation) requests(pod *v1.Pod) (cpuMilli, memBytes int64) {
	spec := proto.Clone(pod.GetSpec()).(*v1.PodSpec)
	for _, list := range [][]*v1.Container{spec.InitContainers, spec.Containers} {
		for _, c := range list {
			if r, ok := a[c.Name]; ok {
				c.Resources = r
			}
		}
	}
	req, _ := quota.PodRequests(spec)
	return req["cpu"].MilliValue(), req["memory"].Value()
}

// resizePending is a PodResizePending verdict (nil: none pending).
type resizePending struct {
	reason, message string
}

// allocate returns the pod's allocation, admitting a resize of its spec
// when the node has room, and the verdict on a resize it could not admit.
func (m *Manager) allocate(pod *v1.Pod) (allocation, *resizePending) {
	uid := pod.GetMetadata().GetUid()
	want := specAllocation(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.allocs[uid]
	if !ok {
		m.allocs[uid] = allocEntry{alloc: want, pod: pod}
		return want, nil
	}
	cur.pod = pod
	m.allocs[uid] = cur
	if cur.alloc.equal(want) {
		return cur.alloc, nil
	}
	if p := m.fits(uid, pod, want); p != nil {
		return cur.alloc, p
	}
	m.allocs[uid] = allocEntry{alloc: want, pod: pod}
	m.log.Info("resize admitted", "pod", pod.GetMetadata().GetNamespace()+"/"+pod.GetMetadata().GetName())
	return want, nil
}

// fits says why want does not fit the node beside the other pods'
// allocations (nil: it fits). Called with m.mu held.
func (m *Manager) fits(uid string, pod *v1.Pod, want allocation) *resizePending {
	alloc := m.cfg.allocatable()
	if alloc == nil {
		return nil
	}
	cpu, mem := want.requests(pod)
	var usedCPU, usedMem int64
	for other, e := range m.allocs {
		if other == uid {
			continue
		}
		c, mm := e.alloc.requests(e.pod)
		usedCPU += c
		usedMem += mm
	}
	for _, r := range []struct {
		name            string
		requested, used int64
		milli           bool
	}{{"cpu", cpu, usedCPU, true}, {"memory", mem, usedMem, false}} {
		q, err := resource.Parse(alloc[r.name])
		if err != nil {
			continue
		}
		capacity := q.Value()
		if r.milli {
			capacity = q.MilliValue()
		}
		if r.requested > capacity {
			return &resizePending{ReasonInfeasible, fmt.Sprintf("Node didn't have enough capacity: %s, requested: %d, capacity: %d", r.name, r.requested, capacity)}
		}
		if r.requested+r.used > capacity {
			return &resizePending{ReasonDeferred, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r.name, r.requested, r.used, capacity)}
		}
	}
	return nil
}

// allocEntry is one pod's allocation and the pod it was computed for.
type allocEntry struct {
	alloc allocation
	pod   *v1.Pod
}

// applied is what a container was last given: its cgroup settings and
// the requests and limits they came from.
type applied struct {
	res  runtime.Resources
	spec *v1.ResourceRequirements
}

// needsRestart says whether running container cur of c must restart to
// take its allocation: a resource changed whose resizePolicy is
// RestartContainer.
func needsRestart(in *syncInput, c *v1.Container, cur *runtime.ContainerStatus) bool {
	have, ok := in.applied[cur.ID]
	if !ok || in.alloc == nil {
		return false
	}
	want, err := resources(in.alloc.container(c))
	if err != nil || want == have.res {
		return false
	}
	cpu := want.CPULimitMilli != have.res.CPULimitMilli || want.CPURequestMilli != have.res.CPURequestMilli
	mem := want.MemoryLimitBytes != have.res.MemoryLimitBytes
	return cpu && validation.ResizeRestartPolicy(c, "cpu") == validation.ResizeRestartContainer ||
		mem && validation.ResizeRestartPolicy(c, "memory") == validation.ResizeRestartContainer
}

// resizeInPlace gives each running container of the current sandbox its
// allocation where it runs with something else, in place; it returns
// whether one still does not, and why (applying failed).
func (r *syncRun) resizeInPlace(ctx context.Context) (inProgress bool, errMsg string) {
	w, in := r.w, r.in
	if r.sb == nil {
		return false, ""
	}
	live := map[string]bool{}
	for _, c := range append(append([]*v1.Container{}, in.pod.GetSpec().GetInitContainers()...), in.pod.GetSpec().GetContainers()...) {
		cur, _ := in.state.latest(c.Name, r.sb.ID)
		if cur == nil || cur.State != runtime.ContainerRunning {
			continue
		}
		live[cur.ID] = true
		ac := in.alloc.container(c)
		want, err := resources(ac)
		if err != nil {
			continue
		}
		have, known := w.applied[cur.ID]
		if !known {
			// Adopted (the kubelet restarted): it runs with what the last
			// status said, or — reported by a kubelet that could not
			// resize, so never resized — with its allocation.
			have = applied{res: want, spec: ac.GetResources()}
			for _, cs := range append(append([]*v1.ContainerStatus{}, in.status.GetInitContainerStatuses()...), in.status.GetContainerStatuses()...) {
				if cs.ContainerId == containerIDPrefix+cur.ID && cs.Resources != nil {
					if res, err := resources(&v1.Container{Resources: cs.Resources}); err == nil {
						have = applied{res: res, spec: cs.Resources}
					}
				}
			}
			w.applied[cur.ID] = have
		}
		if have.res == want {
			continue
		}
		if needsRestart(in, c, cur) {
			inProgress = true // killed and restarted by the next sync's plan
			continue
		}
		if want.MemoryLimitBytes > 0 && (have.res.MemoryLimitBytes == 0 || want.MemoryLimitBytes < have.res.MemoryLimitBytes) {
			if st, err := w.m.rt.ContainerStats(ctx, cur.ID); err == nil && st.MemoryUsageBytes > uint64(want.MemoryLimitBytes) {
				inProgress, errMsg = true, fmt.Sprintf("attempting to set container %q memory limit (%d) below current usage (%d)", c.Name, want.MemoryLimitBytes, st.MemoryUsageBytes)
				r.wakeAt(w.m.now().Add(5 * time.Second))
				continue
			}
		}
		if err := w.m.rt.UpdateContainerResources(ctx, cur.ID, want); err != nil {
			if errors.Is(err, runtime.ErrNotRunning) || errors.Is(err, runtime.ErrNotFound) {
				continue
			}
			w.log.Warn("resizing container", "container", c.Name, "err", err)
			inProgress, errMsg = true, fmt.Sprintf("container %q: %v", c.Name, err)
			r.wakeAt(w.m.now().Add(5 * time.Second))
			continue
		}
		w.applied[cur.ID] = applied{res: want, spec: ac.GetResources()}
		w.m.rec.Eventf(in.pod, eventNormal, "ResizeCompleted", "Pod resize completed: container %s %s", c.Name, formatResources(ac.GetResources()))
	}
	for id := range w.applied {
		if !live[id] && !r.touched[id] {
			delete(w.applied, id)
		}
	}
	return inProgress, errMsg
}

func formatResources(r *v1.ResourceRequirements) string {
	return fmt.Sprintf("requests %v limits %v", r.GetRequests(), r.GetLimits())
}

// resizeConditions sets or clears PodResizePending and
// PodResizeInProgress.
func resizeConditions(conds []*v1.Condition, in statusInput) []*v1.Condition {
	if p := in.resizePending; p != nil {
		conds = setCondition(conds, CondPodResizePending, true, p.reason, p.message, in.now)
	} else {
		conds = dropCondition(conds, CondPodResizePending)
	}
	if in.resizeInProgress {
		reason := ""
		if in.resizeError != "" {
			reason = ReasonResizeError
		}
		conds = setCondition(conds, CondPodResizeInProgress, true, reason, in.resizeError, in.now)
	} else {
		conds = dropCondition(conds, CondPodResizeInProgress)
	}
	return conds
}

func dropCondition(conds []*v1.Condition, typ string) []*v1.Condition {
	out := conds[:0]
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
		}
	}
	return out
}

// withResources fills a container status's allocatedResources (the
// allocated requests) and, while it runs, resources (what it was given).
func (in statusInput) withResources(cs *v1.ContainerStatus, v containerView) *v1.ContainerStatus {
	if in.alloc == nil {
		return cs
	}
	if r := in.alloc[v.spec.Name]; len(r.GetRequests()) > 0 {
		cs.AllocatedResources = r.GetRequests()
	}
	if v.cur != nil && v.cur.State == runtime.ContainerRunning {
		if a, ok := in.applied[v.cur.ID]; ok {
			cs.Resources = &v1.ResourceRequirements{}
			if a.spec != nil {
				cs.Resources = proto.Clone(a.spec).(*v1.ResourceRequirements)
			}
		}
	}
	return cs
}
