package nodelifecycle

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// evictionTime is when p must leave a node with these NoExecute taints,
// and false if it tolerates them all forever. firstSeen gives the start of
// a taint that carries no timeAdded.
func evictionTime(p *v1.Pod, taints []*v1.Taint, defaultToleration time.Duration, firstSeen func(*v1.Taint) time.Time) (time.Time, bool) {
	var at time.Time
	found := false
	for _, taint := range taints {
		if taint.Effect != "NoExecute" {
			continue
		}
		var tol *v1.Toleration
		for _, t := range p.GetSpec().GetTolerations() {
			if t.ToleratesTaint(taint) {
				tol = t
				break
			}
		}
		var delay time.Duration
		switch {
		case tol == nil && (taint.Key == TaintUnreachable || taint.Key == TaintNotReady):
			delay = defaultToleration
		case tol == nil:
			delay = 0
		case tol.TolerationSeconds == nil:
			continue // tolerated forever
		default:
			delay = time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second
		}
		start := firstSeen(taint)
		if taint.GetTimeAdded() != nil {
			start = taint.GetTimeAdded().AsTime()
		}
		if t := start.Add(delay); !found || t.Before(at) {
			at, found = t, true
		}
	}
	return at, found
}

// evict deletes the node's pods whose toleration ran out, as fast as the
// rate limiter and the disruption state allow, and schedules the next look.
func (c *Controller) evict(ctx context.Context, log *slog.Logger, n *v1.Node, unreachable bool, now time.Time) error {
	var taints []*v1.Taint
	for _, t := range n.GetSpec().GetTaints() {
		if t.Effect == "NoExecute" {
			taints = append(taints, t)
		}
	}
	if len(taints) == 0 {
		return nil
	}
	name := n.GetMetadata().GetName()
	var next time.Duration
	later := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	rate, state := -1.0, "" // computed at the first pod due
	for _, p := range c.pods.ByIndex(controller.IndexNodeName, name) {
		m := p.GetMetadata()
		at, due := evictionTime(p, taints, c.cfg.PodEvictionTimeout, func(t *v1.Taint) time.Time { return c.taintSeen(name, t, now) })
		if m.GetDeletionTimestamp() != nil {
			// Already being deleted: only an unreachable node leaves it stuck
			// Terminating, so finish it once its grace period is over.
			if !unreachable {
				continue
			}
			at, due = m.GetDeletionTimestamp().AsTime(), true
		}
		if !due {
			continue
		}
		if ph := p.GetStatus().GetPhase(); (ph == "Succeeded" || ph == "Failed") && m.GetDeletionTimestamp() == nil {
			continue // finished: nothing runs, nothing to move
		}
		if wait := at.Sub(now); wait > 0 {
			later(wait)
			continue
		}
		if rate < 0 {
			rate, state = c.evictionRate()
		}
		if rate == 0 {
			log.Info("not evicting: too many nodes are unhealthy", "state", state)
			later(c.cfg.MonitorPeriod)
			break
		}
		if wait := c.limiter.take(rate, c.now()); wait > 0 {
			later(wait)
			break
		}
		_, err := c.podAPI.Delete(ctx, m.GetNamespace(), m.GetName(),
			client.DeleteOptions{GracePeriodSeconds: new(int64), ResourceVersion: m.GetResourceVersion()})
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			later(10 * time.Millisecond) // changed under us: look again
		case err != nil:
			return err
		default:
			c.metrics.evictions.Inc()
			log.Info("evicted pod from node", "pod", m.GetNamespace()+"/"+m.GetName())
			c.events.Eventf(p, controller.Normal, "TaintManagerEviction", "Deleting pod %s/%s from node %s (NoExecute taint not tolerated)", m.GetNamespace(), m.GetName(), name)
		}
	}
	if next > 0 {
		c.loop.EnqueueAfter(name, next+10*time.Millisecond)
	}
	return nil
}

// Disruption states.
const (
	stateNormal  = "Normal"
	statePartial = "PartialDisruption"
	stateFull    = "FullDisruption"
)

// evictionRate is the eviction rate for the cluster's current health.
func (c *Controller) evictionRate() (float64, string) {
	total := len(c.nodes.List())
	c.mu.Lock()
	down := 0
	for _, h := range c.health {
		if h.down {
			down++
		}
	}
	c.mu.Unlock()
	state := disruption(total, down, c.cfg.UnhealthyThreshold)
	c.metrics.unhealthy.Set(float64(down))
	switch state {
	case stateFull:
		c.metrics.disruption.Set(2)
		return 0, state
	case statePartial:
		c.metrics.disruption.Set(1)
		if total <= c.cfg.LargeClusterThreshold {
			return 0, state
		}
		return c.cfg.SecondaryEvictionRate, state
	}
	c.metrics.disruption.Set(0)
	return c.cfg.EvictionRate, state
}

// disruption classifies the cluster: every node down is a full
// disruption; at least threshold of them (and more than two) partial.
func disruption(total, down int, threshold float64) string {
	switch {
	case total > 0 && down >= total:
		return stateFull
	case down > 2 && float64(down) >= threshold*float64(total):
		return statePartial
	}
	return stateNormal
}

// tokenBucket limits evictions to a rate with a burst; the rate may change
// between calls.
type tokenBucket struct {
	mu     sync.Mutex
	tokens float64
	burst  float64
	last   time.Time
}

func newTokenBucket(rate float64, burst int, now time.Time) *tokenBucket {
	return &tokenBucket{tokens: float64(burst), burst: float64(burst), last: now}
}

// take takes a token at rate, or says how long until one is available.
func (b *tokenBucket) take(rate float64, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if rate <= 0 {
		return time.Duration(math.MaxInt64)
	}
	b.tokens = math.Min(b.burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// taintSeen is when this controller first saw a taint that carries no
// timeAdded (a user's), the start of its toleration.
func (c *Controller) taintSeen(node string, t *v1.Taint, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := node + "\x00" + t.Key + "\x00" + t.Value
	if at, ok := c.seen[k]; ok {
		return at
	}
	c.seen[k] = now
	return now
}
