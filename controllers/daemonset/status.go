package daemonset

import (
	"context"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) writeStatus(ctx context.Context, ds *v1.DaemonSet, nodes []*nodePods) error {
	now := c.now()
	mrs := ds.GetSpec().GetMinReadySeconds()
	st := &v1.DaemonSetStatus{ObservedGeneration: ds.GetMetadata().GetGeneration(), Conditions: ds.GetStatus().GetConditions()}
	if old := ds.GetStatus(); old != nil {
		st.CollisionCount = old.CollisionCount
	}
	for _, np := range nodes {
		var p *v1.Pod
		if np.newPod != nil {
			p = np.newPod
		} else {
			p = np.oldPod
		}
		if !np.run && !(np.stay && p != nil) {
			if p != nil {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if p == nil {
			continue
		}
		st.CurrentNumberScheduled++
		if np.newPod != nil {
			st.UpdatedNumberScheduled++
		}
		if controller.IsPodReady(p) {
			st.NumberReady++
		}
		if controller.IsPodAvailable(p, mrs, now) {
			st.NumberAvailable++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	if proto.Equal(ds.GetStatus(), st) {
		return nil
	}
	next := proto.Clone(ds).(*v1.DaemonSet)
	next.Status = st
	_, err := c.dsAPI.UpdateStatus(ctx, next)
	return err
}
