package deployment

import (
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Progressing reasons, as Kubernetes names them (tugctl rollout status
// reads them).
const (
	ReasonNewRSAvailable   = "NewReplicaSetAvailable"
	ReasonRSUpdated        = "ReplicaSetUpdated"
	ReasonTimedOut         = "ProgressDeadlineExceeded"
	ReasonPaused           = "DeploymentPaused"
	ReasonResumed          = "DeploymentResumed"
	ReasonMinAvailable     = "MinimumReplicasAvailable"
	ReasonMinUnavailable   = "MinimumReplicasUnavailable"
	conditionProgressing   = "Progressing"
	conditionAvailable     = "Available"
	conditionReplicaFailed = "ReplicaFailure"
)

func newCondition(typ, status, reason, msg string, now time.Time) *v1.Condition {
	ts := timestamppb.New(now)
	return &v1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, LastUpdateTime: ts, LastTransitionTime: ts}
}

// setCondition sets c on d's status unless a condition of that type with
// the same status and reason is already there (so its times and message
// stay); the transition time is kept when only the reason changes.
func setCondition(d *v1.Deployment, c *v1.Condition) {
	if d.Status == nil {
		d.Status = &v1.DeploymentStatus{}
	}
	setConditionIn(&d.Status.Conditions, c)
}

func setConditionIn(list *[]*v1.Condition, c *v1.Condition) {
	cur := controller.GetCondition(*list, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	controller.RemoveCondition(list, c.Type)
	*list = append(*list, c)
}

func hasDeadline(d *v1.Deployment) bool {
	p := d.GetSpec().ProgressDeadlineSeconds
	return p != nil && *p != math.MaxInt32
}

// calculateStatus derives the Deployment's status from its ReplicaSets.
func (c *Controller) calculateStatus(d *v1.Deployment, all []*v1.ReplicaSet, newRS *v1.ReplicaSet) *v1.DeploymentStatus {
	avail := availableCount(all)
	st := &v1.DeploymentStatus{
		ObservedGeneration:  d.GetMetadata().GetGeneration(),
		Replicas:            statusCount(all),
		UpdatedReplicas:     statusCount([]*v1.ReplicaSet{newRS}),
		ReadyReplicas:       readyCount(all),
		AvailableReplicas:   avail,
		UnavailableReplicas: max(specCount(all)-avail, 0),
		CollisionCount:      d.GetStatus().GetCollisionCount(),
	}
	for _, cond := range d.GetStatus().GetConditions() {
		st.Conditions = append(st.Conditions, proto.Clone(cond).(*v1.Condition))
	}
	now := c.now()
	if avail >= replicas(d)-maxUnavailable(d) {
		setConditionIn(&st.Conditions, newCondition(conditionAvailable, controller.True, ReasonMinAvailable, "Deployment has minimum availability.", now))
	} else {
		setConditionIn(&st.Conditions, newCondition(conditionAvailable, controller.False, ReasonMinUnavailable, "Deployment does not have minimum availability.", now))
	}
	// Surface a ReplicaSet's failure to create or delete pods.
	var failure *v1.Condition
	for _, rs := range all {
		if f := controller.GetCondition(rs.GetStatus().GetConditions(), conditionReplicaFailed); f != nil && f.Status == controller.True {
			failure = f
			break
		}
	}
	if failure != nil {
		setConditionIn(&st.Conditions, newCondition(conditionReplicaFailed, controller.True, failure.Reason, failure.Message, now))
	} else {
		controller.RemoveCondition(&st.Conditions, conditionReplicaFailed)
	}
	return st
}

// complete reports whether every replica is updated and available and the
// status reflects the current spec.
func complete(d *v1.Deployment, st *v1.DeploymentStatus) bool {
	n := replicas(d)
	return st.UpdatedReplicas == n && st.Replicas == n && st.AvailableReplicas == n &&
		st.ObservedGeneration >= d.GetMetadata().GetGeneration()
}

// progressing reports whether st shows progress over d's stored status.
func progressing(d *v1.Deployment, st *v1.DeploymentStatus) bool {
	old := d.GetStatus()
	return st.UpdatedReplicas > old.GetUpdatedReplicas() ||
		st.Replicas-st.UpdatedReplicas < old.GetReplicas()-old.GetUpdatedReplicas() ||
		st.ReadyReplicas > old.GetReadyReplicas() ||
		st.AvailableReplicas > old.GetAvailableReplicas()
}

// timedOut reports whether the Progressing condition in st is older than
// the progress deadline.
func timedOut(d *v1.Deployment, st *v1.DeploymentStatus, now time.Time) bool {
	if !hasDeadline(d) {
		return false
	}
	cond := controller.GetCondition(st.Conditions, conditionProgressing)
	switch {
	case cond == nil || cond.Reason == ReasonNewRSAvailable:
		return false
	case cond.Reason == ReasonTimedOut:
		return true
	}
	deadline := cond.GetLastUpdateTime().AsTime().Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

// syncRolloutStatus writes status with the Progressing condition of a
// rollout, and looks again at the deadline if no progress shows.
func (c *Controller) syncRolloutStatus(ctx context.Context, d *v1.Deployment, all []*v1.ReplicaSet, newRS *v1.ReplicaSet) error {
	st := c.calculateStatus(d, all, newRS)
	now := c.now()
	if !hasDeadline(d) {
		controller.RemoveCondition(&st.Conditions, conditionProgressing)
	}
	cur := controller.GetCondition(d.GetStatus().GetConditions(), conditionProgressing)
	done := st.Replicas == st.UpdatedReplicas && cur != nil && cur.Reason == ReasonNewRSAvailable
	subject := fmt.Sprintf("Deployment %q", d.GetMetadata().GetName())
	if newRS != nil {
		subject = fmt.Sprintf("ReplicaSet %q", newRS.GetMetadata().GetName())
	}
	if hasDeadline(d) && !done {
		switch {
		case complete(d, st):
			setConditionIn(&st.Conditions, newCondition(conditionProgressing, controller.True, ReasonNewRSAvailable,
				subject+" has successfully progressed.", now))
		case progressing(d, st):
			cond := newCondition(conditionProgressing, controller.True, ReasonRSUpdated, subject+" is progressing.", now)
			if cur != nil && cur.Status == controller.True {
				cond.LastTransitionTime = cur.LastTransitionTime
			}
			// Replace even an identical reason: the update time is the
			// progress deadline's starting point.
			controller.RemoveCondition(&st.Conditions, conditionProgressing)
			st.Conditions = append(st.Conditions, cond)
		case timedOut(d, st, now):
			setConditionIn(&st.Conditions, newCondition(conditionProgressing, controller.False, ReasonTimedOut,
				subject+" has timed out progressing.", now))
		}
	}
	if proto.Equal(st, d.GetStatus()) {
		c.requeueStuck(d, st)
		return nil
	}
	if cond := controller.GetCondition(st.Conditions, conditionProgressing); cond != nil && cond.Reason == ReasonTimedOut {
		if prev := controller.GetCondition(d.GetStatus().GetConditions(), conditionProgressing); prev == nil || prev.Reason != ReasonTimedOut {
			c.events.Eventf(d, controller.Warning, ReasonTimedOut, "%s", cond.Message)
		}
	}
	d.Status = st
	return c.writeDeployment(ctx, d, false, true)
}

// requeueStuck looks at d again when its progress deadline would pass.
func (c *Controller) requeueStuck(d *v1.Deployment, st *v1.DeploymentStatus) {
	cur := controller.GetCondition(d.GetStatus().GetConditions(), conditionProgressing)
	if !hasDeadline(d) || cur == nil || complete(d, st) || cur.Reason == ReasonTimedOut {
		return
	}
	after := cur.GetLastUpdateTime().AsTime().Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(c.now())
	if after < 0 {
		after = 0
	}
	c.loop.EnqueueAfter(v1.Key(d), after+100*time.Millisecond)
}

// syncStatus writes status without touching the Progressing condition
// (paused, scaling, being deleted).
func (c *Controller) syncStatus(ctx context.Context, d *v1.Deployment, all []*v1.ReplicaSet, newRS *v1.ReplicaSet) error {
	st := c.calculateStatus(d, all, newRS)
	if proto.Equal(st, d.GetStatus()) {
		return nil
	}
	d.Status = st
	return c.writeDeployment(ctx, d, false, true)
}

// checkPaused sets Progressing Unknown when the Deployment is paused or
// resumed (unless it already reported a timeout).
func (c *Controller) checkPaused(ctx context.Context, d *v1.Deployment) error {
	if !hasDeadline(d) {
		return nil
	}
	cur := controller.GetCondition(d.GetStatus().GetConditions(), conditionProgressing)
	if cur != nil && cur.Reason == ReasonTimedOut {
		return nil
	}
	isPaused := cur != nil && cur.Reason == ReasonPaused
	now := c.now()
	switch {
	case d.Spec.Paused && !isPaused:
		setCondition(d, newCondition(conditionProgressing, controller.Unknown, ReasonPaused, "Deployment is paused", now))
	case !d.Spec.Paused && isPaused:
		setCondition(d, newCondition(conditionProgressing, controller.Unknown, ReasonResumed, "Deployment is resumed", now))
	default:
		return nil
	}
	return c.writeDeployment(ctx, d, false, true)
}
