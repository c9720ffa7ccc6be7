package pod

import (
	"context"
	"errors"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// ReasonEvicted is the status reason of a pod the kubelet evicted to
// reclaim a resource the node is short of.
const ReasonEvicted = "Evicted"

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

// ReasonDeadlineExceeded is the status reason of a pod that ran longer
// than its spec.activeDeadlineSeconds; MessageDeadlineExceeded its message.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// evict carries an eviction out (on the worker's goroutine).
func (w *worker) evict(ctx context.Context, pod *v1.Pod, msg string) syncResult {
	w.log.Warn("evicting the pod", "message", msg)
	w.m.metrics.evictions.Inc()
	return w.fail(ctx, pod, ReasonEvicted, msg)
}

// deadline returns when the pod's spec.activeDeadlineSeconds runs out,
// counted from status.startTime; zero if it has none (or has not started).
func deadline(pod *v1.Pod, status *v1.PodStatus) time.Time {
	d := pod.GetSpec().ActiveDeadlineSeconds
	start := status.GetStartTime()
	if d == nil || start == nil {
		return time.Time{}
	}
	return start.AsTime().Add(time.Duration(*d) * time.Second)
}

// fail makes the pod fail for good, for a reason of the node's (eviction,
// deadline): a Warning event, its containers stopped within its grace
// period, phase Failed with reason and message, then the terminal
// clean-up (sandbox and network released).
func (w *worker) fail(ctx context.Context, pod *v1.Pod, reason, msg string) syncResult {
	w.m.rec.Eventf(pod, eventWarning, reason, "%s", msg)
	w.m.prober.RemovePod(w.uid)
	st, err := w.observe(ctx)
	if err == nil {
		grace := podGrace(pod)
		var wg sync.WaitGroup
		for _, c := range st.containers {
			if c.State != runtime.ContainerRunning && c.State != runtime.ContainerUnknown {
				continue
			}
			wg.Add(1)
			go func(c runtime.ContainerStatus) {
				defer wg.Done()
				w.m.rec.Eventf(pod, eventNormal, "Killing", "Stopping container %s", c.Name)
				if err := w.m.rt.StopContainer(ctx, c.ID, grace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
					w.log.Warn("stopping a failed pod's container", "reason", reason, "container", c.Name, "err", err)
				}
			}(c)
		}
		wg.Wait()
		st, err = w.observe(ctx)
	}
	status := &v1.PodStatus{}
	if w.status != nil {
		status = proto.Clone(w.status).(*v1.PodStatus)
	}
	status.Phase, status.Reason, status.Message = PhaseFailed, reason, msg
	// Terminal from now on; syncTerminal publishes it, rebuilt with the
	// stopped containers' states (not the running ones of before).
	w.status = status
	if err != nil {
		w.publish(pod, status)
		return syncResult{after: 0} // syncTerminal observes again
	}
	return w.syncTerminal(ctx, pod, st)
}
