package nodelifecycle

import (
	"context"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// Reason and message of the Ready=Unknown condition (Kubernetes' words).
const (
	ReasonNodeStatusUnknown  = "NodeStatusUnknown"
	MessageNodeStatusUnknown = "Kubelet stopped posting node status."
)

// nodeHealth is what the controller observed of a node's lease.
type nodeHealth struct {
	renew time.Time // the lease's renewTime as last seen
	probe time.Time // our clock when renew last changed; zero: unreachable until it changes
	down  bool      // unreachable or not ready at the last sync (for the disruption count)
}

// observe records the lease and returns when it was last seen renewed.
func (c *Controller) observe(n *v1.Node, lease *v1.Lease, now time.Time) time.Time {
	name := n.GetMetadata().GetName()
	var renew time.Time
	if t := lease.GetSpec().GetRenewTime(); t != nil {
		renew = t.AsTime()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.health[name]
	switch {
	case !ok:
		h = &nodeHealth{renew: renew, probe: now}
		if markedUnreachable(n) {
			// Declared unreachable before we started: believe it until the
			// lease is seen to change, rather than granting a fresh grace period.
			h.probe = time.Time{}
		}
		c.health[name] = h
	case !renew.Equal(h.renew):
		h.renew, h.probe = renew, now
	}
	return h.probe
}

func (c *Controller) setDown(name string, down bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.health[name]; ok {
		h.down = down
	}
}

func (c *Controller) forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.health, name)
	for k := range c.seen {
		if strings.HasPrefix(k, name+"\x00") {
			delete(c.seen, k)
		}
	}
}

// markedUnreachable reports whether the node carries our unreachable marks.
func markedUnreachable(n *v1.Node) bool {
	if hasTaint(n, TaintUnreachable) {
		return true
	}
	r := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
	return r != nil && r.Status == controller.Unknown && r.Reason == ReasonNodeStatusUnknown
}

func hasTaint(n *v1.Node, key string) bool {
	for _, t := range n.GetSpec().GetTaints() {
		if t.Key == key && t.Effect == "NoExecute" {
			return true
		}
	}
	return false
}

// sync checks one node: health, conditions, taints, pods.
func (c *Controller) sync(ctx context.Context, name string) error {
	n, ok := c.nodes.Get(name)
	if !ok {
		c.forget(name)
		return nil
	}
	now := c.now()
	lease, _ := c.leases.Get(LeaseNamespace + "/" + name)
	probe := c.observe(n, lease, now)
	unreachable := now.Sub(probe) > c.cfg.GracePeriod
	log := c.log.With("node", name)

	if unreachable {
		var err error
		if n, err = c.markUnknown(ctx, n, now); err != nil || n == nil {
			return err
		}
	} else {
		// Look again the moment the lease would expire.
		c.loop.EnqueueAfter(name, probe.Add(c.cfg.GracePeriod).Sub(now)+10*time.Millisecond)
	}
	ready := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
	want := ""
	switch {
	case unreachable:
		want = TaintUnreachable
	case ready != nil && ready.Status == controller.False:
		want = TaintNotReady
	}
	c.setDown(name, want != "")
	n, err := c.ensureTaint(ctx, n, want, now)
	if err != nil || n == nil {
		return err // nil: the node was deleted meanwhile
	}
	if unreachable {
		if err := c.markPodsNotReady(ctx, name, now); err != nil {
			return err
		}
	}
	return c.evict(ctx, log, n, unreachable, now)
}

// markUnknown sets every node condition to Unknown (the kubelet stopped
// reporting them).
func (c *Controller) markUnknown(ctx context.Context, n *v1.Node, now time.Time) (*v1.Node, error) {
	r := controller.GetCondition(n.GetStatus().GetConditions(), "Ready")
	if r != nil && r.Status == controller.Unknown && r.Reason == ReasonNodeStatusUnknown {
		return n, nil
	}
	name := n.GetMetadata().GetName()
	out, err := c.nodeAPI.Mutate(ctx, "", name, true, func(cur *v1.Node) error {
		if cur.Status == nil {
			cur.Status = &v1.NodeStatus{}
		}
		if controller.GetCondition(cur.Status.Conditions, "Ready") == nil {
			cur.Status.Conditions = append(cur.Status.Conditions, &v1.Condition{Type: "Ready"})
		}
		for _, cond := range cur.Status.Conditions {
			if cond.Status != controller.Unknown {
				cond.LastTransitionTime = timestamppb.New(now)
			}
			cond.Status = controller.Unknown
			cond.Reason = ReasonNodeStatusUnknown
			cond.Message = MessageNodeStatusUnknown
		}
		return nil
	})
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	c.log.Warn("node stopped renewing its lease; marking it unreachable", "node", name, "grace", c.cfg.GracePeriod)
	c.events.Eventf(out, controller.Normal, "NodeNotReady", "Node %s status is now: NodeNotReady (no lease renewal for %s)", name, c.cfg.GracePeriod)
	return out, nil
}

// ensureTaint makes want the only one of our two NoExecute taints on the
// node ("" removes both).
func (c *Controller) ensureTaint(ctx context.Context, n *v1.Node, want string, now time.Time) (*v1.Node, error) {
	have := map[string]bool{TaintUnreachable: hasTaint(n, TaintUnreachable), TaintNotReady: hasTaint(n, TaintNotReady)}
	if have[TaintUnreachable] == (want == TaintUnreachable) && have[TaintNotReady] == (want == TaintNotReady) {
		return n, nil
	}
	name := n.GetMetadata().GetName()
	out, err := c.nodeAPI.Mutate(ctx, "", name, false, func(cur *v1.Node) error {
		if cur.Spec == nil {
			cur.Spec = &v1.NodeSpec{}
		}
		var kept []*v1.Taint
		found := false
		for _, t := range cur.Spec.Taints {
			switch {
			case t.Key == want && t.Effect == "NoExecute":
				found = true
				kept = append(kept, t)
			case (t.Key == TaintUnreachable || t.Key == TaintNotReady) && t.Effect == "NoExecute":
				// the other one, or one we no longer want
			default:
				kept = append(kept, t)
			}
		}
		if want != "" && !found {
			kept = append(kept, &v1.Taint{Key: want, Effect: "NoExecute", TimeAdded: timestamppb.New(now)})
		}
		cur.Spec.Taints = kept
		return nil
	})
	if err != nil {
		return nil, ignoreNotFound(err)
	}
	if want == "" {
		c.log.Info("node healthy again; removed its NoExecute taint", "node", name)
	} else {
		c.log.Info("tainted node", "node", name, "taint", want+":NoExecute")
	}
	return out, nil
}

// markPodsNotReady sets Ready=False on the pods of an unreachable node, so
// endpoints stop sending them traffic before they are evicted.
func (c *Controller) markPodsNotReady(ctx context.Context, node string, now time.Time) error {
	for _, p := range c.pods.ByIndex(controller.IndexNodeName, node) {
		if !controller.IsPodReady(p) {
			continue
		}
		m := p.GetMetadata()
		_, err := c.podAPI.Mutate(ctx, m.GetNamespace(), m.GetName(), true, func(cur *v1.Pod) error {
			if cur.Spec.GetNodeName() != node || cur.Status == nil {
				return nil
			}
			for _, t := range []string{"Ready", "ContainersReady"} {
				if cond := controller.GetCondition(cur.Status.Conditions, t); cond != nil && cond.Status == controller.True {
					cond.Status = controller.False
					cond.Reason = "NodeNotReady"
					cond.Message = "Node " + node + " is unreachable"
					cond.LastTransitionTime = timestamppb.New(now)
				}
			}
			return nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// ignoreNotFound turns NotFound (the node is gone) into a nil node and error.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
