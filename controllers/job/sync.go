package job

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// sync converges one Job (or releases an orphaned pod).
func (c *Controller) sync(ctx context.Context, key string) error {
	if podKey, ok := isOrphanKey(key); ok {
		return c.syncOrphan(ctx, podKey)
	}
	j, ok := c.jobs.Get(key)
	if !ok {
		c.exp.Delete(key)
		return nil
	}
	log := c.log.With("job", key)
	sel, err := labels.FromLabelSelector(j.GetSpec().GetSelector())
	if err != nil {
		return controller.Permanent(fmt.Errorf("job %s: spec.selector: %w", key, err))
	}
	if sel.Empty() {
		return controller.Permanent(fmt.Errorf("job %s: spec.selector selects nothing", key))
	}
	satisfied := c.exp.Satisfied(key)
	pods, err := c.claim(ctx, j, sel)
	if err != nil {
		return err
	}
	if finishedCondition(j) != nil {
		return c.syncFinished(ctx, j, pods)
	}
	now := c.cfg.Now()
	s := newState(j, pods, now, c.tracked)
	// Step 1 of counting: record the newly finished pods before their
	// finalizers go.
	if s.recordFinished() {
		j, err = c.writeStatus(ctx, j, s.st)
		if err != nil {
			return err
		}
		s.job = j
	}
	// Step 2: release them (and ignored failures, and pods already recorded).
	released, relErr := c.releasePods(ctx, s.release)
	// Step 3: what was released is counted.
	s.count(released)
	s.checkBackoffLimit()

	var manageErr error
	switch {
	case s.counting():
		// Finish only once every finished pod is counted; the failed
		// release is retried.
	case s.failReason != "":
		manageErr = c.finish(ctx, log, s, "Failed", s.failReason, s.failMessage)
	case s.complete():
		manageErr = c.finish(ctx, log, s, "Complete", ReasonCompleted, "")
	case j.GetSpec().GetSuspend():
		manageErr = c.suspend(ctx, s)
	case j.GetMetadata().GetDeletionTimestamp() != nil:
	default:
		c.resume(s)
		if s.deadlineExceeded() {
			manageErr = c.finish(ctx, log, s, "Failed", ReasonDeadlineExceeded, "Job was active longer than specified deadline")
			break
		}
		if satisfied {
			manageErr = c.manage(ctx, log, s)
		}
		if d := s.untilDeadline(); d > 0 {
			c.loop.EnqueueAfter(key, d)
		}
	}
	s.fillCounts()
	if _, err := c.writeStatus(ctx, s.job, s.st); err != nil {
		return errors.Join(relErr, manageErr, err)
	}
	return errors.Join(relErr, manageErr)
}

// claim returns every pod the Job controls, finished ones included.
func (c *Controller) claim(ctx context.Context, j *v1.Job, sel labels.Selector) ([]*v1.Pod, error) {
	m := j.GetMetadata()
	candidates := c.pods.ByIndex(controller.IndexControllerUID, m.GetUid())
	for _, p := range c.pods.ByIndex(controller.IndexOrphanNamespace, m.GetNamespace()) {
		if !finished(p) {
			candidates = append(candidates, p) // finished orphans are not adopted
		}
	}
	claimer := &controller.Claimer[*v1.Pod]{API: c.podAPI, Owner: j, APIVersion: "batch/v1", Kind: "Job", Selector: sel,
		CanAdopt: controller.RecheckOwner(c.jobAPI, j)}
	return claimer.Claim(ctx, candidates)
}

// syncFinished releases the pods of a finished Job and deletes the Job
// once its ttlSecondsAfterFinished has passed.
func (c *Controller) syncFinished(ctx context.Context, j *v1.Job, pods []*v1.Pod) error {
	var held []*v1.Pod
	for _, p := range pods {
		if c.tracked(p) {
			held = append(held, p)
		}
	}
	if _, err := c.releasePods(ctx, held); err != nil {
		return err
	}
	ttl := j.GetSpec().TtlSecondsAfterFinished
	if ttl == nil || j.GetMetadata().GetDeletionTimestamp() != nil {
		return nil
	}
	at := finishedCondition(j).GetLastTransitionTime().AsTime().Add(time.Duration(*ttl) * time.Second)
	if wait := at.Sub(c.cfg.Now()); wait > 0 {
		c.loop.EnqueueAfter(v1.Key(j), wait)
		return nil
	}
	m := j.GetMetadata()
	_, err := c.jobAPI.Delete(ctx, m.GetNamespace(), m.GetName(),
		client.DeleteOptions{ResourceVersion: m.GetResourceVersion(), PropagationPolicy: "Foreground"})
	if err == nil {
		c.log.Info("deleted finished job after its TTL", "job", v1.Key(j), "ttlSecondsAfterFinished", *ttl)
	}
	return ignoreGone(err)
}

// finish marks the Job Complete or Failed and stops its active pods.
func (c *Controller) finish(ctx context.Context, log *slog.Logger, s *state, cond, reason, msg string) error {
	now := s.now
	controller.SetCondition(&s.st.Conditions, &v1.Condition{Type: cond, Status: controller.True, Reason: reason, Message: msg}, now)
	if cond == "Complete" {
		s.st.CompletionTime = timestamppb.New(now)
		c.events.Eventf(s.job, controller.Normal, "Completed", "Job completed")
	} else {
		c.events.Eventf(s.job, controller.Warning, reason, "%s", msg)
	}
	c.finished.WithLabelValues(cond, reason).Inc()
	log.Info("job finished", "condition", cond, "reason", reason, "succeeded", s.succeeded(), "failed", s.failed())
	err := c.deletePods(ctx, s.job, s.active)
	s.active = nil
	return err
}
