package controller

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Condition statuses.
const (
	True    = "True"
	False   = "False"
	Unknown = "Unknown"
)

// IsPodActive reports whether a pod counts towards a controller's
// replicas: not finished and not being deleted.
func IsPodActive(p *v1.Pod) bool {
	return !IsPodFinished(p) && p.GetMetadata().GetDeletionTimestamp() == nil
}

// IsPodFinished reports whether a pod's phase is Succeeded or Failed.
func IsPodFinished(p *v1.Pod) bool {
	ph := p.GetStatus().GetPhase()
	return ph == "Succeeded" || ph == "Failed"
}

// IsPodReady reports whether the pod's Ready condition is True.
func IsPodReady(p *v1.Pod) bool {
	c := GetCondition(p.GetStatus().GetConditions(), "Ready")
	return c != nil && c.Status == True
}

// IsPodAvailable reports whether the pod has been Ready for at least
// minReadySeconds at now (Kubernetes' availability).
func IsPodAvailable(p *v1.Pod, minReadySeconds int32, now time.Time) bool {
	c := GetCondition(p.GetStatus().GetConditions(), "Ready")
	if c == nil || c.Status != True {
		return false
	}
	if minReadySeconds <= 0 {
		return true
	}
	since := c.GetLastTransitionTime()
	return since != nil && !since.AsTime().Add(time.Duration(minReadySeconds)*time.Second).After(now)
}

// AvailableIn is how long until a Ready pod becomes available, or 0 if it
// already is or is not Ready.
func AvailableIn(p *v1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	c := GetCondition(p.GetStatus().GetConditions(), "Ready")
	if c == nil || c.Status != True || minReadySeconds <= 0 || c.GetLastTransitionTime() == nil {
		return 0
	}
	d := c.GetLastTransitionTime().AsTime().Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	return max(d, 0)
}

// GetCondition returns the condition of type t, or nil.
func GetCondition(list []*v1.Condition, t string) *v1.Condition {
	for _, c := range list {
		if c.GetType() == t {
			return c
		}
	}
	return nil
}

// SetCondition puts c into list, replacing the condition of its type. The
// transition time is kept when the status did not change, and set to now
// (if unset) when it did. It reports whether anything changed other than
// the heartbeat and update times.
func SetCondition(list *[]*v1.Condition, c *v1.Condition, now time.Time) bool {
	for i, old := range *list {
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else if c.LastTransitionTime == nil {
			c.LastTransitionTime = timestamppb.New(now)
		}
		changed := old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message
		(*list)[i] = c
		return changed
	}
	if c.LastTransitionTime == nil {
		c.LastTransitionTime = timestamppb.New(now)
	}
	*list = append(*list, c)
	return true
}

// RemoveCondition drops the condition of type t.
func RemoveCondition(list *[]*v1.Condition, t string) {
	out := (*list)[:0]
	for _, c := range *list {
		if c.Type != t {
			out = append(out, c)
		}
	}
	*list = out
}
