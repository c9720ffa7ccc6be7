package replicaset

import (
	"sort"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// podsToDelete picks the n pods a scale-down removes: the ones whose loss
// hurts least, in Kubernetes' order of preference:
//
//  1. not yet scheduled before scheduled;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. ready for less time before ready for longer;
//  5. more container restarts before fewer;
//  6. newer before older.
func podsToDelete(pods []*v1.Pod, n int) []*v1.Pod {
	if n >= len(pods) {
		return pods
	}
	sorted := append([]*v1.Pod(nil), pods...)
	sort.SliceStable(sorted, func(i, j int) bool { return deleteFirst(sorted[i], sorted[j]) })
	return sorted[:n]
}

// deleteFirst reports whether a should be deleted before b.
func deleteFirst(a, b *v1.Pod) bool {
	// 1. Unscheduled first.
	as, bs := a.GetSpec().GetNodeName() != "", b.GetSpec().GetNodeName() != ""
	if as != bs {
		return !as
	}
	// 2. Pending < Unknown < Running.
	if ra, rb := phaseRank(a), phaseRank(b); ra != rb {
		return ra < rb
	}
	// 3. Not ready first.
	ar, br := controller.IsPodReady(a), controller.IsPodReady(b)
	if ar != br {
		return !ar
	}
	// 4. Ready for less time first.
	if ar && br {
		ta, tb := readySince(a), readySince(b)
		if !ta.Equal(tb) {
			return ta.After(tb)
		}
	}
	// 5. More restarts first.
	if ca, cb := restarts(a), restarts(b); ca != cb {
		return ca > cb
	}
	// 6. Newer first.
	ta, tb := a.GetMetadata().GetCreationTimestamp().AsTime(), b.GetMetadata().GetCreationTimestamp().AsTime()
	if !ta.Equal(tb) {
		return ta.After(tb)
	}
	return a.GetMetadata().GetName() > b.GetMetadata().GetName()
}

func phaseRank(p *v1.Pod) int {
	switch p.GetStatus().GetPhase() {
	case "Pending", "":
		return 0
	case "Unknown":
		return 1
	case "Running":
		return 2
	}
	return 3
}

func readySince(p *v1.Pod) time.Time {
	c := controller.GetCondition(p.GetStatus().GetConditions(), "Ready")
	if c == nil || c.GetLastTransitionTime() == nil {
		return time.Time{}
	}
	return c.GetLastTransitionTime().AsTime()
}

func restarts(p *v1.Pod) int32 {
	var n int32
	for _, s := range p.GetStatus().GetContainerStatuses() {
		n += s.GetRestartCount()
	}
	return n
}
