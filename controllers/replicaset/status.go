package replicaset

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// calculateStatus derives a ReplicaSet's status from its claimed pods.
func calculateStatus(rs *v1.ReplicaSet, pods []*v1.Pod, manageErr error, now time.Time) *v1.ReplicaSetStatus {
	st := &v1.ReplicaSetStatus{
		ObservedGeneration: rs.GetMetadata().GetGeneration(),
		Conditions:         cloneConditions(rs.GetStatus().GetConditions()),
	}
	tmpl := rs.GetSpec().GetTemplate().GetMetadata().GetLabels()
	mrs := rs.GetSpec().GetMinReadySeconds()
	for _, p := range pods {
		st.Replicas++
		if hasAll(p.GetMetadata().GetLabels(), tmpl) {
			st.FullyLabeledReplicas++
		}
		if controller.IsPodReady(p) {
			st.ReadyReplicas++
			if controller.IsPodAvailable(p, mrs, now) {
				st.AvailableReplicas++
			}
		}
	}
	if manageErr != nil {
		reason := "FailedCreate"
		if int(rs.GetSpec().GetReplicas()) < len(pods) {
			reason = "FailedDelete"
		}
		controller.SetCondition(&st.Conditions, &v1.Condition{
			Type: "ReplicaFailure", Status: controller.True, Reason: reason, Message: manageErr.Error(),
		}, now)
	} else {
		controller.RemoveCondition(&st.Conditions, "ReplicaFailure")
	}
	if len(st.Conditions) == 0 {
		st.Conditions = nil
	}
	return st
}

// writeStatus stores the status if it changed, and looks again when a
// ready pod is due to become available.
func (c *Controller) writeStatus(ctx context.Context, rs *v1.ReplicaSet, pods []*v1.Pod, manageErr error) error {
	now := c.now()
	st := calculateStatus(rs, pods, manageErr, now)
	if !proto.Equal(st, rs.GetStatus()) {
		next := informer.Copy(rs)
		next.Status = st
		_, err := c.rsAPI.UpdateStatus(ctx, next)
		if apierrors.IsConflict(err) {
			// Our cached copy is stale; write onto the current one.
			_, err = c.rsAPI.Mutate(ctx, rs.Metadata.Namespace, rs.Metadata.Name, true, func(cur *v1.ReplicaSet) error {
				cur.Status = calculateStatus(cur, pods, manageErr, now)
				return nil
			})
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if mrs := rs.GetSpec().GetMinReadySeconds(); mrs > 0 && manageErr == nil {
		var soonest time.Duration
		for _, p := range pods {
			if d := controller.AvailableIn(p, mrs, now); d > 0 && (soonest == 0 || d < soonest) {
				soonest = d
			}
		}
		if soonest > 0 {
			c.loop.EnqueueAfter(v1.Key(rs), soonest+10*time.Millisecond)
		}
	}
	return nil
}

func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func cloneConditions(in []*v1.Condition) []*v1.Condition {
	out := make([]*v1.Condition, len(in))
	for i, c := range in {
		out[i] = proto.Clone(c).(*v1.Condition)
	}
	return out
}
