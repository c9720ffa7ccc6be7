package podautoscaler

import (
	"math"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// history is what the stabilization windows and the rate policies of one
// autoscaler look back on.
type history struct {
	recommendations []recommendation
	scaleUps        []scaleEvent
	scaleDowns      []scaleEvent
}

type recommendation struct {
	at       time.Time
	replicas int32
}

type scaleEvent struct {
	at     time.Time
	change int32
}

// normalize turns a metric's proposal into the replicas to set:
// stabilized, limited by the policies, within min/maxReplicas. A non-empty
// reason says what limited it.
func (c *Controller) normalize(h *v1.HorizontalPodAutoscaler, key string, current, proposal int32, now time.Time) (int32, string, string) {
	sp := h.GetSpec()
	up, down := sp.GetBehavior().GetScaleUp(), sp.GetBehavior().GetScaleDown()
	c.mu.Lock()
	defer c.mu.Unlock()
	hist := c.history[key]
	if hist == nil {
		hist = &history{}
		c.history[key] = hist
	}
	hist.recommendations = append(hist.recommendations, recommendation{at: now, replicas: proposal})
	// Stabilize: scaling up takes the lowest recommendation of the up
	// window, scaling down the highest of the down window.
	upWindow := time.Duration(up.GetStabilizationWindowSeconds()) * time.Second
	downWindow := time.Duration(down.GetStabilizationWindowSeconds()) * time.Second
	upRec, downRec := proposal, proposal
	keep := hist.recommendations[:0]
	for _, r := range hist.recommendations {
		age := now.Sub(r.at)
		if age <= upWindow {
			upRec = min(upRec, r.replicas)
		}
		if age <= downWindow {
			downRec = max(downRec, r.replicas)
		}
		if age <= max(upWindow, downWindow) {
			keep = append(keep, r)
		}
	}
	hist.recommendations = keep
	desired := current
	switch {
	case upRec > current:
		desired = upRec
	case downRec < current:
		desired = downRec
	}
	reason, msg := "", ""
	// Rate limits.
	if desired > current {
		if limit := scaleUpLimit(up, hist.scaleUps, current, now); desired > limit {
			desired, reason, msg = limit, "ScaleUpLimit", "the desired replica count is increasing faster than the maximum scale rate"
		}
	} else if desired < current {
		if limit := scaleDownLimit(down, hist.scaleDowns, current, now); desired < limit {
			desired, reason, msg = limit, "ScaleDownLimit", "the desired replica count is decreasing faster than the maximum scale rate"
		}
	}
	if desired > sp.GetMaxReplicas() {
		desired, reason, msg = sp.GetMaxReplicas(), "TooManyReplicas", "the desired replica count is more than the maximum replica count"
	}
	if desired < sp.GetMinReplicas() {
		desired, reason, msg = sp.GetMinReplicas(), "TooFewReplicas", "the desired replica count is less than the minimum replica count"
	}
	return desired, reason, msg
}

// recordScale remembers a change for the rate policies.
func (c *Controller) recordScale(key string, from, to int32, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	hist := c.history[key]
	if hist == nil {
		return
	}
	if to > from {
		hist.scaleUps = append(prune(hist.scaleUps, now), scaleEvent{at: now, change: to - from})
	} else {
		hist.scaleDowns = append(prune(hist.scaleDowns, now), scaleEvent{at: now, change: from - to})
	}
}

// prune drops events older than the longest policy period (30 minutes).
func prune(events []scaleEvent, now time.Time) []scaleEvent {
	out := events[:0]
	for _, e := range events {
		if now.Sub(e.at) <= 30*time.Minute {
			out = append(out, e)
		}
	}
	return out
}

func changedWithin(events []scaleEvent, period time.Duration, now time.Time) int32 {
	var n int32
	for _, e := range events {
		if now.Sub(e.at) <= period {
			n += e.change
		}
	}
	return n
}

// scaleUpLimit is the most replicas the policies allow now: for each
// policy, from the replicas at the start of its period; Max takes the most
// permissive policy, Min the strictest, Disabled allows no change.
func scaleUpLimit(r *v1.HPAScalingRules, events []scaleEvent, current int32, now time.Time) int32 {
	if r.GetSelectPolicy() == "Disabled" {
		return current
	}
	var limit int32 = -1
	for _, p := range r.GetPolicies() {
		start := current - changedWithin(events, time.Duration(p.PeriodSeconds)*time.Second, now)
		var l int32
		if p.Type == "Pods" {
			l = start + p.Value
		} else {
			l = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		switch {
		case limit < 0:
			limit = l
		case r.GetSelectPolicy() == "Min":
			limit = min(limit, l)
		default:
			limit = max(limit, l)
		}
	}
	if limit < 0 {
		return current
	}
	return max(limit, current)
}

// scaleDownLimit is the fewest replicas the policies allow now.
func scaleDownLimit(r *v1.HPAScalingRules, events []scaleEvent, current int32, now time.Time) int32 {
	if r.GetSelectPolicy() == "Disabled" {
		return current
	}
	var limit int32 = -1
	for _, p := range r.GetPolicies() {
		start := current + changedWithin(events, time.Duration(p.PeriodSeconds)*time.Second, now)
		var l int32
		if p.Type == "Pods" {
			l = start - p.Value
		} else {
			l = int32(math.Floor(float64(start) * (1 - float64(p.Value)/100)))
		}
		switch {
		case limit < 0:
			limit = l
		case r.GetSelectPolicy() == "Min":
			limit = max(limit, l)
		default:
			limit = min(limit, l)
		}
	}
	if limit < 0 {
		return current
	}
	return min(limit, current)
}
