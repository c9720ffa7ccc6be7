package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	h, ok := c.hpas.Get(key)
	if !ok {
		return nil
	}
	defer c.loop.EnqueueAfter(key, c.cfg.SyncPeriod)
	now := c.now()
	st, _ := proto.Clone(h.GetStatus()).(*v1.HorizontalPodAutoscalerStatus)
	if st == nil {
		st = &v1.HorizontalPodAutoscalerStatus{}
	}
	st.ObservedGeneration = h.GetMetadata().GetGeneration()
	err := c.reconcile(ctx, h, st, now)
	if !proto.Equal(h.GetStatus(), st) {
		next := proto.Clone(h).(*v1.HorizontalPodAutoscaler)
		next.Status = st
		if _, uerr := c.hpaAPI.UpdateStatus(ctx, next); uerr != nil {
			return errors.Join(err, uerr)
		}
	}
	return err
}

func setCond(st *v1.HorizontalPodAutoscalerStatus, typ, status, reason, format string, args ...any) {
	controller.SetCondition(&st.Conditions, &v1.Condition{Type: typ, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}, time.Now())
}

// reconcile measures, decides and scales; the status records why.
func (c *Controller) reconcile(ctx context.Context, h *v1.HorizontalPodAutoscaler, st *v1.HorizontalPodAutoscalerStatus, now time.Time) error {
	ns, ref := h.GetMetadata().GetNamespace(), h.GetSpec().GetScaleTargetRef()
	k, err := kinds.Lookup(ref.GetKind())
	if err == nil && k.Scale == nil {
		err = fmt.Errorf("%s are not scalable", k.Plural)
	}
	var target v1.Object
	if err == nil {
		target, err = client.ForKind(c.c, k).Get(ctx, ns, ref.GetName())
	}
	if err != nil {
		c.events.Eventf(h, controller.Warning, "FailedGetScale", "%v", err)
		setCond(st, "AbleToScale", controller.False, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		return err
	}
	current := k.Scale.Replicas(target)
	st.CurrentReplicas = current
	if current == 0 && h.GetSpec().GetMinReplicas() != 0 {
		st.DesiredReplicas = 0
		setCond(st, "ScalingActive", controller.False, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		return nil
	}
	sel, err := labels.FromLabelSelector(k.Scale.LabelSelector(target))
	if err != nil {
		return controller.Permanent(err)
	}
	var pods []*v1.Pod
	for _, p := range c.pods.ByIndex(controller.IndexNamespace, ns) {
		if controller.IsPodActive(p) && p.GetStatus().GetPhase() == "Running" && sel.Matches(p.GetMetadata().GetLabels()) {
			pods = append(pods, p)
		}
	}
	usage := c.podUsage(ctx, pods)
	proposal, metrics, reason, err := c.proposal(h, pods, usage, current)
	if err != nil {
		c.events.Eventf(h, controller.Warning, "FailedGetResourceMetric", "%v", err)
		setCond(st, "ScalingActive", controller.False, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: %v", err)
		return nil // measured again next period
	}
	st.CurrentMetrics = metrics
	setCond(st, "ScalingActive", controller.True, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from %s", reason)
	desired, limitReason, limitMsg := c.normalize(h, v1.Key(h), current, proposal, now)
	if limitReason != "" {
		setCond(st, "ScalingLimited", controller.True, limitReason, "%s", limitMsg)
	} else {
		setCond(st, "ScalingLimited", controller.False, "DesiredWithinRange", "the desired count is within the acceptable range")
	}
	st.DesiredReplicas = desired
	if desired == current {
		setCond(st, "AbleToScale", controller.True, "ReadyForNewScale", "recommended size matches current size")
		return nil
	}
	_, err = client.ForKind(c.c, k).Mutate(ctx, ns, ref.GetName(), false, func(o v1.Object) error {
		k.Scale.SetReplicas(o, desired)
		return nil
	})
	if err != nil {
		c.events.Eventf(h, controller.Warning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, reason, err)
		setCond(st, "AbleToScale", controller.False, "FailedUpdateScale", "the HPA controller was unable to update the target scale: %v", err)
		return err
	}
	dir := "up"
	if desired < current {
		dir = "down"
		reason = reason + " below target"
	} else {
		reason = reason + " above target"
	}
	c.rescales.WithLabelValues(dir).Inc()
	c.recordScale(v1.Key(h), current, desired, now)
	c.events.Eventf(h, controller.Normal, "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
	c.log.Info("rescaled", "hpa", v1.Key(h), "from", current, "to", desired)
	setCond(st, "AbleToScale", controller.True, "SucceededRescale", "the HPA controller was able to update the target scale to %d", desired)
	st.CurrentReplicas, st.LastScaleTime = desired, timestamppb.New(now)
	return nil
}

// podUsage asks the kubelets of the pods' nodes for their usage, through
// the apiserver's node relay; pods whose node does not answer are missing.
func (c *Controller) podUsage(ctx context.Context, pods []*v1.Pod) map[string]*v1.ResourceUsage {
	nodes := map[string]bool{}
	for _, p := range pods {
		if n := p.GetSpec().GetNodeName(); n != "" {
			nodes[n] = true
		}
	}
	out := map[string]*v1.ResourceUsage{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			resp, err := c.stats.Stats(sctx, &v1.StatsRequest{NodeName: n})
			if err != nil {
				c.log.Debug("no stats from node", "node", n, "err", err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, ps := range resp.GetPods() {
				out[ps.GetNamespace()+"/"+ps.GetName()] = ps.GetUsage()
			}
		}()
	}
	wg.Wait()
	return out
}

// proposal is the replica count each metric asks for (the largest wins),
// the metrics' current values and a description of the deciding one.
func (c *Controller) proposal(h *v1.HorizontalPodAutoscaler, pods []*v1.Pod, usage map[string]*v1.ResourceUsage, current int32) (int32, []*v1.MetricStatus, string, error) {
	var best int32
	var reason string
	var statuses []*v1.MetricStatus
	for _, m := range h.GetSpec().GetMetrics() {
		r := m.GetResource()
		var used, requested int64
		measured := 0
		for _, p := range pods {
			u, ok := usage[v1.Key(p)]
			if !ok {
				continue
			}
			measured++
			req := podRequest(p, r.GetName())
			if r.GetTarget().GetType() == "Utilization" && req == 0 {
				return 0, nil, "", fmt.Errorf("missing request for %s in pod %s", r.GetName(), p.GetMetadata().GetName())
			}
			requested += req
			if r.GetName() == "cpu" {
				used += u.GetCpuMilli()
			} else {
				used += u.GetMemoryBytes()
			}
		}
		if measured == 0 {
			return 0, nil, "", fmt.Errorf("unable to get metrics for resource %s: no metrics returned from the kubelets for %d pods", r.GetName(), len(pods))
		}
		var ratio float64
		ms := &v1.MetricStatus{Type: "Resource", Resource: &v1.ResourceMetricStatus{Name: r.GetName(), Current: &v1.MetricValueStatus{}}}
		avg := used / int64(measured)
		ms.Resource.Current.AverageValue = quantityString(r.GetName(), avg)
		if r.GetTarget().GetType() == "Utilization" {
			util := int32(used * 100 / requested)
			ms.Resource.Current.AverageUtilization = proto.Int32(util)
			ratio = float64(util) / float64(r.GetTarget().GetAverageUtilization())
			reason = fmt.Sprintf("%s resource utilization (percentage of request)", r.GetName())
		} else {
			q, _ := resource.Parse(r.GetTarget().GetAverageValue())
			want := q.Value()
			if r.GetName() == "cpu" {
				want = q.MilliValue()
			}
			ratio = float64(avg) / float64(want)
			reason = fmt.Sprintf("%s resource", r.GetName())
		}
		statuses = append(statuses, ms)
		n := current
		if math.Abs(1-ratio) > c.cfg.Tolerance {
			n = int32(math.Ceil(ratio * float64(measured)))
		}
		best = max(best, n)
	}
	return best, statuses, reason, nil
}

// podRequest sums a pod's containers' requests of a resource (cpu in
// milli, memory in bytes), falling back to limits as Kubernetes does.
func podRequest(p *v1.Pod, name string) int64 {
	var sum int64
	for _, ct := range p.GetSpec().GetContainers() {
		v, ok := ct.GetResources().GetRequests()[name]
		if !ok {
			v = ct.GetResources().GetLimits()[name]
		}
		if v == "" {
			continue
		}
		q, err := resource.Parse(v)
		if err != nil {
			continue
		}
		if name == "cpu" {
			sum += q.MilliValue()
		} else {
			sum += q.Value()
		}
	}
	return sum
}

func quantityString(name string, v int64) string {
	if name == "cpu" {
		return fmt.Sprintf("%dm", v)
	}
	return fmt.Sprintf("%d", v)
}
