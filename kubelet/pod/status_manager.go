package pod

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// statusManager writes pod statuses to the API in the background, so a
// pod worker never waits for the apiserver. Per pod only the latest status
// is kept (intermediate ones are skipped when writes lag), an unchanged
// status is not written again, and writes are compare-and-swap on the
// resource version the kubelet last saw for that pod UID: a pod deleted
// and re-created under the same name is never written with an old pod's
// status.
type statusManager struct {
	api     PodAPI
	log     *slog.Logger
	writers int

	mu       sync.Mutex
	pending  map[string]*statusEntry // uid -> waiting to be written
	inflight map[string]bool
	written  map[string]*v1.PodStatus // uid -> last status written
	rv       map[string]int64         // uid -> newest resource version seen
	queue    chan string
}

type statusEntry struct {
	pod    *v1.Pod
	status *v1.PodStatus
	at     time.Time // when it was set (for the step log)
}

// newStatusManager writes with writers goroutines; queue is the capacity
// of the queue of pods to write (a pod is queued at most once until
// written, so the node's pod capacity is enough; past it, the writers'
// periodic sweep picks pods up).
func newStatusManager(api PodAPI, log *slog.Logger, writers, queue int) *statusManager {
	return &statusManager{
		api: api, log: log, writers: writers,
		pending:  map[string]*statusEntry{},
		inflight: map[string]bool{},
		written:  map[string]*v1.PodStatus{},
		rv:       map[string]int64{},
		queue:    make(chan string, queue),
	}
}

// set records the status to write for pod.
func (s *statusManager) set(pod *v1.Pod, status *v1.PodStatus) {
	uid := pod.GetMetadata().GetUid()
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv := pod.GetMetadata().GetResourceVersion(); rv > s.rv[uid] {
		s.rv[uid] = rv
	}
	last := s.written[uid]
	if last == nil && s.pending[uid] == nil {
		last = pod.GetStatus() // what the API has: nothing to write if equal
	}
	if last != nil && proto.Equal(last, status) {
		delete(s.pending, uid)
		return
	}
	_, queued := s.pending[uid]
	s.pending[uid] = &statusEntry{pod: pod, status: status, at: time.Now()}
	if !queued && !s.inflight[uid] {
		s.enqueue(uid)
	}
}

func (s *statusManager) enqueue(uid string) {
	select {
	case s.queue <- uid:
	default:
		// Full: a writer picks it up on its periodic sweep.
	}
}

// forget drops a pod the kubelet is done with.
func (s *statusManager) forget(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, uid)
	delete(s.written, uid)
	delete(s.rv, uid)
}

func (s *statusManager) resourceVersion(pod *v1.Pod) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.rv[pod.GetMetadata().GetUid()], pod.GetMetadata().GetResourceVersion())
}

// run writes statuses with s.writers goroutines until ctx ends.
func (s *statusManager) run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := 0; i < s.writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.writer(ctx)
		}()
	}
	wg.Wait()
}

func (s *statusManager) writer(ctx context.Context) {
	sweep := time.NewTicker(2 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case uid := <-s.queue:
			s.writeOne(ctx, uid)
		case <-sweep.C:
			s.mu.Lock()
			var uids []string
			for uid := range s.pending {
				if !s.inflight[uid] {
					uids = append(uids, uid)
				}
			}
			s.mu.Unlock()
			for _, uid := range uids {
				s.writeOne(ctx, uid)
			}
		}
	}
}

func (s *statusManager) writeOne(ctx context.Context, uid string) {
	s.mu.Lock()
	e := s.pending[uid]
	if e == nil || s.inflight[uid] {
		s.mu.Unlock()
		return
	}
	delete(s.pending, uid)
	s.inflight[uid] = true
	rv := max(s.rv[uid], e.pod.GetMetadata().GetResourceVersion())
	s.mu.Unlock()

	start := time.Now()
	out, err := s.write(ctx, e, rv)
	if err == nil {
		logStep(s.log, "pod status written", start, nil, "pod", e.pod.GetMetadata().GetNamespace()+"/"+e.pod.GetMetadata().GetName(),
			"uid", uid, "phase", e.status.GetPhase(), "running", allRunning(e.status), "queued", start.Sub(e.at).Seconds())
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, uid)
	switch {
	case err == nil:
		s.written[uid] = e.status
		if out != nil && out.GetMetadata().GetResourceVersion() > s.rv[uid] {
			s.rv[uid] = out.GetMetadata().GetResourceVersion()
		}
	case errGone(err):
		// The pod is gone (or is another pod now): nothing to write.
	default:
		if ctx.Err() == nil {
			s.log.Warn("writing pod status", "pod", e.pod.GetMetadata().GetNamespace()+"/"+e.pod.GetMetadata().GetName(), "err", err)
		}
		if s.pending[uid] == nil {
			s.pending[uid] = e // retried on the next sweep
		}
		return
	}
	if s.pending[uid] != nil {
		s.enqueue(uid)
	}
}

type goneError struct{}

func (goneError) Error() string { return "pod gone" }

func errGone(err error) bool { _, ok := err.(goneError); return ok }

// write does the compare-and-swap status update, re-reading the pod on a
// conflict.
func (s *statusManager) write(ctx context.Context, e *statusEntry, rv int64) (*v1.Pod, error) {
	meta := e.pod.GetMetadata()
	for attempt := 0; attempt < 5; attempt++ {
		obj := &v1.Pod{
			Metadata: &v1.ObjectMeta{Name: meta.GetName(), Namespace: meta.GetNamespace(), Uid: meta.GetUid(), ResourceVersion: rv},
			Status:   e.status,
		}
		out, err := s.api.UpdateStatus(ctx, obj)
		switch {
		case err == nil:
			return out, nil
		case apierrors.IsNotFound(err):
			return nil, goneError{}
		case !apierrors.IsConflict(err):
			return nil, err
		}
		cur, err := s.api.Get(ctx, meta.GetNamespace(), meta.GetName())
		if apierrors.IsNotFound(err) {
			return nil, goneError{}
		}
		if err != nil {
			return nil, err
		}
		if cur.GetMetadata().GetUid() != meta.GetUid() {
			return nil, goneError{}
		}
		rv = cur.GetMetadata().GetResourceVersion()
		s.mu.Lock()
		if rv > s.rv[meta.GetUid()] {
			s.rv[meta.GetUid()] = rv
		}
		s.mu.Unlock()
	}
	return nil, apierrors.New(apierrors.ErrConflict, "pod %s/%s: status update kept conflicting", meta.GetNamespace(), meta.GetName())
}

// finishDeletion deletes the pod object with grace 0, guarded so that a
// new pod with the same name is never deleted by mistake.
func (s *statusManager) finishDeletion(ctx context.Context, pod *v1.Pod) error {
	meta := pod.GetMetadata()
	rv := s.resourceVersion(pod)
	zero := int64(0)
	for attempt := 0; attempt < 10; attempt++ {
		_, err := s.api.Delete(ctx, meta.GetNamespace(), meta.GetName(), client.DeleteOptions{GracePeriodSeconds: &zero, ResourceVersion: rv})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			s.forget(meta.GetUid())
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("deleting the pod from the API: %w", err)
		}
		cur, err := s.api.Get(ctx, meta.GetNamespace(), meta.GetName())
		if apierrors.IsNotFound(err) || (err == nil && cur.GetMetadata().GetUid() != meta.GetUid()) {
			s.forget(meta.GetUid())
			return nil
		}
		if err != nil {
			return err
		}
		rv = cur.GetMetadata().GetResourceVersion()
	}
	return fmt.Errorf("deleting the pod from the API: still conflicting after 10 attempts")
}
