package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/workqueue"
)

// Condition written on pods no node fits.
const (
	condPodScheduled = "PodScheduled"
	// condDisruptionTarget marks a pod about to be deleted by a disruption
	// (here: a preemption), as Kubernetes does.
	condDisruptionTarget        = "DisruptionTarget"
	reasonPreemptionByScheduler = "PreemptionByScheduler"
	reasonUnschedulable         = "Unschedulable"
	eventFailedScheduled        = "FailedScheduling"
)

// statusWriter tells users why a pod waits: it records a FailedScheduling
// Event (the recorder aggregates repeats into a count) and writes the
// PodScheduled=False condition with the same message, off the scheduling
// goroutine. Writes are keyed by pod, so a pod retried many times before
// its write gets one write with the latest message.
type statusWriter struct {
	api      *client.Typed[*v1.Pod]
	recorder *record.Recorder
	log      *slog.Logger
	queue    *workqueue.Queue

	mu      sync.Mutex
	pending map[string]string // pod key -> message to write
}

func newStatusWriter(api *client.Typed[*v1.Pod], r *record.Recorder, log *slog.Logger) *statusWriter {
	return &statusWriter{
		api: api, recorder: r, log: log,
		queue:   workqueue.New(100*time.Millisecond, 30*time.Second),
		pending: map[string]string{},
	}
}

// unschedulable reports that no node fits pod, for the reason msg.
func (w *statusWriter) unschedulable(pod *v1.Pod, msg string) {
	w.recorder.Eventf(pod, record.Warning, eventFailedScheduled, "%s", msg)
	if hasUnschedulableCondition(pod, msg) {
		return // the pod already says so
	}
	key := v1.Key(pod)
	w.mu.Lock()
	w.pending[key] = msg
	w.mu.Unlock()
	w.queue.Add(key)
}

func hasUnschedulableCondition(pod *v1.Pod, msg string) bool {
	for _, c := range pod.GetStatus().GetConditions() {
		if c.Type == condPodScheduled {
			return c.Status == "False" && c.Reason == reasonUnschedulable && c.Message == msg
		}
	}
	return false
}

// Run writes conditions with workers goroutines until ctx ends.
func (w *statusWriter) Run(ctx context.Context, workers int) error {
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				key, shutdown := w.queue.Get()
				if shutdown {
					return
				}
				w.process(ctx, key)
				w.queue.Done(key)
			}
		}()
	}
	<-ctx.Done()
	w.queue.ShutDown()
	wg.Wait()
	return nil
}

// errBound stops a condition write for a pod bound meanwhile.
var errBound = errors.New("pod is bound")

func (w *statusWriter) process(ctx context.Context, key string) {
	w.mu.Lock()
	msg, ok := w.pending[key]
	delete(w.pending, key)
	w.mu.Unlock()
	if !ok || ctx.Err() != nil {
		return
	}
	ns, name := splitKey(key)
	_, err := w.api.Mutate(ctx, ns, name, true, func(p *v1.Pod) error {
		if p.GetSpec().GetNodeName() != "" {
			return errBound
		}
		if p.Status == nil {
			p.Status = &v1.PodStatus{}
		}
		setCondition(p.Status, &v1.Condition{Type: condPodScheduled, Status: "False", Reason: reasonUnschedulable, Message: msg})
		return nil
	})
	switch {
	case err == nil || errors.Is(err, errBound) || apierrors.IsNotFound(err):
		w.queue.Forget(key)
	case ctx.Err() != nil:
	default:
		w.log.Warn("writing the unschedulable condition failed; retrying", "pod", key, "err", err)
		w.mu.Lock()
		if _, newer := w.pending[key]; !newer {
			w.pending[key] = msg
		}
		w.mu.Unlock()
		w.queue.AddRateLimited(key)
	}
}

// setCondition replaces or appends a condition, keeping its transition
// time when the status did not change.
func setCondition(st *v1.PodStatus, c *v1.Condition) {
	now := timestamppb.Now()
	for i, old := range st.Conditions {
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status || c.LastTransitionTime == nil {
			c.LastTransitionTime = now
		}
		st.Conditions[i] = c
		return
	}
	c.LastTransitionTime = now
	st.Conditions = append(st.Conditions, c)
}

func splitKey(key string) (ns, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], key[i+1:]
		}
	}
	return "", key
}
