package pod

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// worker owns one pod (by UID) on this node for the pod's life here: from
// the first time the kubelet sees it until its containers, sandbox,
// network and files are gone and the API object is deleted. Its goroutine
// runs sync whenever it is woken (a spec change, a deletion, a container
// that changed state, a probe result, an image import) and on a timer (a
// back-off expiring, the periodic resync).
//
// It keeps only what must live across syncs; what one sync decides and
// does lives in that sync's syncInput, plan and syncRun. The back-offs
// live in the Manager (shared maps keyed by pod UID), the probe workers in
// the prober.
type worker struct {
	m   *Manager
	uid string
	log *slog.Logger

	// The mailbox, written by the Manager's callers.
	mu      sync.Mutex
	pod     *v1.Pod // the latest object from the API
	deleted bool    // the API no longer has it
	wakeCh  chan struct{}
	// evictMessage, if set, asks the worker to evict the pod (Evict).
	evictMessage string
	// stopping is closed (once, by stopRequested) when the pod is to stop:
	// deleted, being deleted or evicted. It aborts a postStart hook that
	// holds up the sync.
	stopping     chan struct{}
	stoppingOnce sync.Once

	// Owned by the worker's goroutine.
	status   *v1.PodStatus // the last status computed (the API's at first)
	accepted time.Time     // when this kubelet first saw the pod
	// ips caches the pod IP by sandbox ID (the network's cache is read
	// once per sandbox).
	ips map[string]string
	// released: terminal, and its sandboxes stopped and network given
	// back.
	released bool
	// volumes are the prepared volumes' host paths by name, as of
	// volumesAt (configMap and secret files are rewritten after
	// volumeRefresh).
	volumes   map[string]string
	volumesAt time.Time
	// volumesMeta are the labels and annotations the volumes were
	// prepared with (formatMap, NUL-separated).
	volumesMeta string
	// startTimed: the pod start latency was observed.
	startTimed bool
	// messages are the exited containers' termination messages by
	// container ID (read once: an exited attempt's cannot change).
	messages map[string]string
	// applied is what each running container was last given (resize.go),
	// by container ID; a container not in it (adopted after a restart) is
	// given its allocation once.
	applied map[string]applied
}

func newWorker(m *Manager, pod *v1.Pod) *worker {
	meta := pod.GetMetadata()
	w := &worker{
		m:        m,
		uid:      meta.GetUid(),
		log:      m.cfg.Logger.With("pod", meta.GetNamespace()+"/"+meta.GetName(), "uid", meta.GetUid()),
		pod:      pod,
		wakeCh:   make(chan struct{}, 1),
		stopping: make(chan struct{}),
		accepted: m.now(),
		ips:      map[string]string{},
		messages: map[string]string{},
		applied:  map[string]applied{},
	}
	if s := pod.GetStatus(); s != nil {
		w.status = proto.Clone(s).(*v1.PodStatus)
		// A pod this kubelet already accepted before a restart keeps the
		// time it was accepted.
		if c := findCondition(s.Conditions, CondAccepted); c != nil && c.Status == "True" && c.LastTransitionTime != nil {
			w.accepted = c.LastTransitionTime.AsTime()
		}
		w.startTimed = s.Phase != "" && s.Phase != PhasePending
	}
	w.log.Debug("pod accepted")
	return w
}

// update hands the worker a newer object; it wakes the worker unless only
// the status (the kubelet's own write) or the resource version changed.
func (w *worker) update(pod *v1.Pod) {
	w.mu.Lock()
	old := w.pod
	w.pod = pod
	w.mu.Unlock()
	if pod.GetMetadata().GetDeletionTimestamp() != nil {
		w.stopRequested()
	}
	if old == nil || !proto.Equal(old.GetSpec(), pod.GetSpec()) ||
		!proto.Equal(old.GetMetadata().GetDeletionTimestamp(), pod.GetMetadata().GetDeletionTimestamp()) ||
		!sameMap(old.GetMetadata().GetLabels(), pod.GetMetadata().GetLabels()) ||
		!sameMap(old.GetMetadata().GetAnnotations(), pod.GetMetadata().GetAnnotations()) {
		w.wake()
	}
}

func (w *worker) markDeleted(pod *v1.Pod) {
	w.mu.Lock()
	if pod != nil {
		w.pod = pod
	}
	w.deleted = true
	w.mu.Unlock()
	w.stopRequested()
	w.wake()
}

// stopRequested records that the pod is to stop (closes stopping).
func (w *worker) stopRequested() { w.stoppingOnce.Do(func() { close(w.stopping) }) }

func (w *worker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

func (w *worker) snapshot() (*v1.Pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod, w.deleted
}

// run syncs until the pod is gone or ctx ends. A cancelled ctx (the
// kubelet stopping) leaves the pod's containers running: the next kubelet
// adopts them.
func (w *worker) run(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wakeCh:
		case <-timer.C:
		}
		start := time.Now()
		res := w.sync(ctx)
		w.m.metrics.syncDuration.Observe(time.Since(start).Seconds())
		if res.done || ctx.Err() != nil {
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(res.after, 10*time.Millisecond))
	}
}

func sameMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}
