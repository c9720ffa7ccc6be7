package pod

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// worker owns one pod (by UID) on this node for the pod's life here: from
// the first time the kubelet sees it until its containers, sandbox,
// network and files are gone and the API object is deleted. Its goroutine
// runs sync whenever it is woken (a spec change, a deletion, a container
// that changed state, a probe result, an image import) and on a timer (a
// back-off expiring, the periodic resync).
type worker struct {
	m   *Manager
	uid string
	log *slog.Logger

	mu      sync.Mutex
	pod     *v1.Pod // the latest object from the API
	deleted bool    // the API no longer has it
	wakeCh  chan struct{}
	// evictMessage, if set, asks the worker to evict the pod (Evict).
	evictMessage string

	// Owned by the worker's goroutine.
	status      *v1.PodStatus // last computed (the API's at first)
	accepted    time.Time
	waiting     map[string]*waiting // this sync's verdicts, by container name
	touched     map[string]bool     // containers this sync created, started or killed
	removed     map[string]bool     // containers this sync removed
	sandboxWait *waiting
	ips         map[string]string // pod IP by sandbox ID
	released    bool              // terminal: sandbox stopped, network given back
	volumes     map[string]string
	volumesAt   time.Time
	startTimed  bool // the pod start latency was observed
}

func newWorker(m *Manager, pod *v1.Pod) *worker {
	meta := pod.GetMetadata()
	w := &worker{
		m:        m,
		uid:      meta.GetUid(),
		log:      m.cfg.Logger.With("pod", meta.GetNamespace()+"/"+meta.GetName(), "uid", meta.GetUid()),
		pod:      pod,
		wakeCh:   make(chan struct{}, 1),
		accepted: m.now(),
		ips:      map[string]string{},
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
	return w
}

// update hands the worker a newer object; it wakes the worker unless only
// the status (the kubelet's own write) or the resource version changed.
func (w *worker) update(pod *v1.Pod) {
	w.mu.Lock()
	old := w.pod
	w.pod = pod
	w.mu.Unlock()
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
	w.wake()
}

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

type syncResult struct {
	after time.Duration
	done  bool
}

// podState is what the runtime has for the pod.
type podState struct {
	sandboxes  []runtime.SandboxStatus
	containers []runtime.ContainerStatus
}

func (w *worker) observe(ctx context.Context) (*podState, error) {
	sbs, err := w.m.rt.ListPodSandbox(ctx, runtime.SandboxFilter{PodUID: w.uid})
	if err != nil {
		return nil, err
	}
	if len(sbs) == 0 {
		// No sandbox, no containers (a container whose sandbox is gone is
		// housekeeping's): skip the costlier container listing, which asks
		// every running task of the node for its state.
		return &podState{}, nil
	}
	cs, err := w.m.rt.ListContainers(ctx, runtime.ContainerFilter{PodUID: w.uid})
	if err != nil {
		return nil, err
	}
	return &podState{sandboxes: sbs, containers: cs}, nil
}

// attempts returns the containers called name, newest attempt first; with
// sandboxID, only those of that sandbox.
func (s *podState) attempts(name, sandboxID string) []*runtime.ContainerStatus {
	var out []*runtime.ContainerStatus
	for i := range s.containers {
		c := &s.containers[i]
		if c.Name == name && (sandboxID == "" || c.SandboxID == sandboxID) {
			out = append(out, c)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort: few attempts
		for j := i; j > 0 && newer(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func newer(a, b *runtime.ContainerStatus) bool {
	if a.Attempt != b.Attempt {
		return a.Attempt > b.Attempt
	}
	return a.CreatedAt.After(b.CreatedAt)
}

// latest returns the newest attempt of name and the one before it.
func (s *podState) latest(name, sandboxID string) (cur, prev *runtime.ContainerStatus) {
	as := s.attempts(name, sandboxID)
	if len(as) > 0 {
		cur = as[0]
	}
	if len(as) > 1 {
		prev = as[1]
	}
	return cur, prev
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
