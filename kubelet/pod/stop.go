package pod

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// A pod stops on the node in two ways, with one stop-with-grace loop
// (stopContainers): deleted (actTerminate: its containers stopped within
// the deletion's grace period, then its sandboxes, network and files
// removed and the API object deleted) or failed by the node (actFail: an
// eviction or its activeDeadlineSeconds; its containers stopped within its
// own grace period, the pod Failed for good with a reason, its sandboxes
// and network released but its records and logs kept).

// ReasonEvicted is the status reason of a pod the kubelet evicted to
// reclaim a resource the node is short of.
const ReasonEvicted = "Evicted"

// ReasonDeadlineExceeded is the status reason of a pod that ran longer
// than its spec.activeDeadlineSeconds; MessageDeadlineExceeded its message.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// Evict makes the pod fail for good with reason Evicted and message (what
// the node is short of): its worker records a Warning Evicted event, stops
// its containers within the pod's grace period, releases its sandbox and
// network, and publishes phase Failed. A controller then replaces it. It
// reports false when no live worker has the pod (gone, or already
// terminal).
func (m *Manager) Evict(uid, message string) bool {
	m.mu.Lock()
	w := m.workers[uid]
	m.mu.Unlock()
	if w == nil {
		return false
	}
	w.mu.Lock()
	w.evictMessage = message
	w.mu.Unlock()
	w.stopRequested()
	w.wake()
	return true
}

// takeEviction returns (and clears) a requested eviction's message.
func (w *worker) takeEviction() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	msg := w.evictMessage
	w.evictMessage = ""
	return msg
}

// stopContainers stops every running container in st, all at once, as
// Kubernetes' killContainersWithSyncResult does: each gets a Killing
// event, its preStop hook and its stop signal within grace, then SIGKILL
// (killContainer); sidecars wait for the app containers and the sidecars
// after them to have stopped before their stop signal (stopOrder).
func (w *worker) stopContainers(ctx context.Context, pod *v1.Pod, st *podState, grace time.Duration) error {
	var running []runtime.ContainerStatus
	for _, c := range st.containers {
		if c.State == runtime.ContainerRunning || c.State == runtime.ContainerUnknown {
			running = append(running, c)
		}
	}
	order := stopOrder(pod, running)
	stopped := map[string]chan struct{}{}
	for _, c := range running {
		stopped[c.ID] = make(chan struct{})
	}
	podIP := w.status.GetPodIp()
	var wg sync.WaitGroup
	errc := make(chan error, len(running))
	for _, c := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(stopped[c.ID])
			spec := findSpec(pod, c.Name)
			var turn func(context.Context)
			if deps := order[c.ID]; len(deps) > 0 {
				turn = func(ctx context.Context) {
					for _, id := range deps {
						select {
						case <-stopped[id]:
						case <-ctx.Done():
							return
						}
					}
				}
			}
			err := w.killContainer(ctx, pod, spec, c.ID, podIP, "Stopping container "+c.Name, grace, turn)
			if err != nil && !errors.Is(err, runtime.ErrNotFound) {
				errc <- fmt.Errorf("stop container %s: %w", c.Name, err)
			}
		}()
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// findSpec is the container of the pod's spec named name (an empty one,
// with no hooks, for a container the spec no longer has).
func findSpec(pod *v1.Pod, name string) *v1.Container {
	for _, c := range append(append([]*v1.Container{}, pod.GetSpec().GetInitContainers()...), pod.GetSpec().GetContainers()...) {
		if c.Name == name {
			return c
		}
	}
	return &v1.Container{Name: name}
}

// terminate stops a pod that is being deleted (deletionTimestamp set) or
// that the API no longer has: its containers within the plan's grace,
// then the sandboxes are torn down (CNI DEL included) and the pod's
// directory is removed; last, a pod still in the API is deleted with grace
// 0, which finishes the graceful deletion the apiserver started. The
// worker is done once it succeeds; until then it retries every 2 s.
func (w *worker) terminate(ctx context.Context, in *syncInput, p *plan) syncResult {
	if err := w.tearDown(ctx, in, p); err != nil {
		if ctx.Err() == nil {
			w.log.Warn("terminating pod", "err", err)
		}
		return syncResult{after: 2 * time.Second}
	}
	return syncResult{done: true}
}

func (w *worker) tearDown(ctx context.Context, in *syncInput, p *plan) error {
	w.m.prober.RemovePod(w.uid)
	if err := w.stopContainers(ctx, in.pod, in.state, p.grace); err != nil {
		return err
	}
	for _, sb := range in.state.sandboxes {
		if err := teardownSandbox(ctx, w.m.rt, w.m.net, sb); err != nil {
			return err
		}
	}
	if err := removePodDir(w.m.cfg.PodDir(w.uid)); err != nil {
		return fmt.Errorf("removing the pod's directory: %w", err)
	}
	w.m.forget(w.uid)
	if in.deleted {
		return nil
	}
	return w.m.status.finishDeletion(ctx, in.pod)
}

// fail makes the pod fail for good, for a reason of the node's (eviction,
// deadline): a Warning event, its containers stopped within its grace
// period, phase Failed with reason and message, then the terminal
// clean-up (sandbox and network released).
func (w *worker) fail(ctx context.Context, in *syncInput, p *plan) syncResult {
	pod := in.pod
	switch p.reason {
	case ReasonEvicted:
		w.log.Warn("evicting the pod", "message", p.message)
		w.m.metrics.evictions.Inc()
	case ReasonDeadlineExceeded:
		w.log.Info("the pod's active deadline passed", "activeDeadlineSeconds", pod.GetSpec().GetActiveDeadlineSeconds())
	}
	w.m.rec.Eventf(pod, eventWarning, p.reason, "%s", p.message)
	w.m.prober.RemovePod(w.uid)
	if err := w.stopContainers(ctx, pod, in.state, p.grace); err != nil {
		w.log.Warn("stopping a failed pod's containers", "reason", p.reason, "err", err)
	}
	st, err := w.observe(ctx)
	status := &v1.PodStatus{}
	if w.status != nil {
		status = proto.Clone(w.status).(*v1.PodStatus)
	}
	status.Phase, status.Reason, status.Message = PhaseFailed, p.reason, p.message
	// Terminal from now on; syncTerminal publishes it, rebuilt with the
	// stopped containers' states (not the running ones of before).
	w.status = status
	if err != nil {
		w.publish(pod, status)
		return syncResult{after: 0} // syncTerminal observes again
	}
	return w.syncTerminal(ctx, pod, st)
}
