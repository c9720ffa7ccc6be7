package scheduler

import (
	"context"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
	"github.com/tugboat/tugboat/scheduler/queue"
)

// scheduleOne makes one decision: pop, decide against the snapshot,
// assume, and hand the pod to the binder.
func (s *Scheduler) scheduleOne(ctx context.Context) {
	qp, err := s.queue.Pop(ctx)
	if err != nil {
		return
	}
	key := qp.Info.Key
	pod, ok := s.pods.Get(key)
	if !ok || !s.responsible(pod) || s.cache.IsAssumed(key) {
		s.queue.Done(key) // gone, bound, being deleted, or being bound by us
		return
	}
	if pod != qp.Info.Pod {
		qp.Info = framework.NewPodInfo(pod) // the queue held an older version
	}
	start := time.Now()
	if vi := s.volumes.volumeInfo(pod); vi != nil || qp.Info.Volumes != nil {
		info := *qp.Info // the queue's PodInfo is shared: decide on a copy
		info.Volumes = vi
		qp.Info = &info
	}
	if cs := s.claims.claimsStatus(pod); cs != nil || qp.Info.Claims != nil {
		info := *qp.Info
		info.Claims = cs
		qp.Info = &info
	}
	s.cache.UpdateSnapshot(s.snapshot)
	if ts := s.cache.Topology(qp.Info, s.namespaceLabels); ts != nil || qp.Info.Topology != nil {
		info := *qp.Info
		info.Topology = ts
		qp.Info = &info
	}
	res, fitErr := s.pipeline.Schedule(qp.Info, s.snapshot.Nodes(), s.nominated.snapshot())
	if fitErr != nil {
		s.metrics.decision.Observe(time.Since(start).Seconds())
		s.metrics.attempts.WithLabelValues("unschedulable").Inc()
		msg := fitErr.Error()
		if post := s.preempt(ctx, qp.Info, pod); post != "" {
			msg += " " + post
		}
		s.queue.AddUnschedulable(qp, fitErr.Events)
		s.log.Debug("unschedulable", "pod", key, "attempts", qp.Attempts, "reason", msg)
		s.status.unschedulable(pod, msg)
		return
	}
	node := res.Node.Name()
	if err := s.cache.AssumePod(qp.Info, node); err != nil {
		s.log.Error("assuming pod", "pod", key, "node", node, "err", err)
		s.metrics.attempts.WithLabelValues("error").Inc()
		s.queue.AddBackoff(qp)
		return
	}
	s.nominated.forget(key) // assumed: the cache counts it on its node now
	s.queue.Done(key)
	s.metrics.decision.Observe(time.Since(start).Seconds())
	s.bind(ctx, qp, node, s.snapshot.Observed())
}

// bind writes the binding asynchronously, waiting for a free slot first.
// observed is the pod revision the decision's snapshot reflected: the
// apiserver refuses the bind if another scheduler bound a pod to the node
// after it (see v1.BindRequest), so racing schedulers never overcommit.
func (s *Scheduler) bind(ctx context.Context, qp *queue.QueuedPod, node string, observed int64) {
	select {
	case s.binds <- struct{}{}:
	case <-ctx.Done():
		s.cache.ForgetPod(qp.Info.Key)
		return
	}
	s.bindWG.Add(1)
	s.metrics.inFlight.Inc()
	go func() {
		defer func() {
			s.metrics.inFlight.Dec()
			<-s.binds
			s.bindWG.Done()
		}()
		s.doBind(ctx, qp, node, observed)
	}()
}

func (s *Scheduler) doBind(ctx context.Context, qp *queue.QueuedPod, node string, observed int64) {
	key, meta := qp.Info.Key, qp.Info.Pod.GetMetadata()
	start := time.Now()
	err := s.preBindVolumes(ctx, qp.Info.Volumes, node)
	if err == nil {
		_, err = s.client.Objects().Bind(ctx, &v1.BindRequest{
			Namespace: meta.GetNamespace(), Name: meta.GetName(), NodeName: node,
			ObservedRevision: observed, Binder: s.cfg.Identity,
		})
		err = apierrors.FromGRPC(err)
	}
	s.metrics.bind.Observe(time.Since(start).Seconds())
	if err == nil {
		s.cache.FinishBinding(key)
		s.metrics.binds.WithLabelValues("ok").Inc()
		s.metrics.attempts.WithLabelValues("scheduled").Inc()
		s.metrics.e2e.Observe(time.Since(qp.Enqueued).Seconds())
		s.recorder.Eventf(qp.Info.Pod, record.Normal, "Scheduled", "Successfully assigned %s to %s", key, node)
		return
	}
	if s.cache.ForgetPod(key) {
		s.queue.MoveAllToActive(framework.PodRemoved) // what we had assumed is free again
	}
	if cur, ok := s.pods.Get(key); ok && s.responsible(cur) {
		s.nominated.set(framework.NewPodInfo(cur), cur.GetStatus().GetNominatedNodeName()) // its room is kept again
	}
	switch {
	case apierrors.IsNotFound(err):
		s.metrics.binds.WithLabelValues("conflict").Inc()
		return // deleted meanwhile
	case apierrors.IsConflict(err):
		// Bound by someone else or being deleted (the queue drops it when
		// the informer shows that), or another scheduler bound a pod to the
		// node that our snapshot did not count yet: decide again.
		s.metrics.binds.WithLabelValues("conflict").Inc()
		s.log.Debug("bind refused; deciding again", "pod", key, "node", node, "err", err)
	default:
		s.metrics.binds.WithLabelValues("error").Inc()
		s.metrics.attempts.WithLabelValues("error").Inc()
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("bind failed; retrying after backoff", "pod", key, "node", node, "err", err)
	}
	s.queue.AddBackoff(qp)
}
