package daemonset

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// rollingUpdate is one step of a RollingUpdate: which nodes get a new pod
// and which old pods go, within maxUnavailable and maxSurge (both
// resolved against the nodes that should run the daemon, rounding up).
func rollingUpdate(ds *v1.DaemonSet, nodes []*nodePods, now time.Time) (create []string, del []*v1.Pod, err error) {
	ru := ds.GetSpec().GetUpdateStrategy().GetRollingUpdate()
	mrs := ds.GetSpec().GetMinReadySeconds()
	desired := int32(0)
	for _, np := range nodes {
		if np.run || (np.stay && (np.newPod != nil || np.oldPod != nil)) {
			desired++
		}
	}
	maxUnavailable, err := controller.ScaledValue(ru.GetMaxUnavailable(), desired, true)
	if err != nil {
		return nil, nil, err
	}
	maxSurge, err := controller.ScaledValue(ru.GetMaxSurge(), desired, true)
	if err != nil {
		return nil, nil, err
	}
	available := func(p *v1.Pod) bool { return p != nil && controller.IsPodAvailable(p, mrs, now) }
	if maxSurge == 0 {
		unavailable := int32(0)
		var candidates []*v1.Pod
		for _, np := range nodes {
			if !np.stay {
				continue
			}
			switch {
			case np.newPod != nil:
				if !available(np.newPod) {
					unavailable++
				}
			case np.oldPod != nil && !available(np.oldPod):
				unavailable++
				del = append(del, np.oldPod) // not serving anyway: replace at once
			case np.oldPod != nil:
				candidates = append(candidates, np.oldPod)
			default:
				unavailable++
			}
		}
		for _, p := range candidates {
			if unavailable >= maxUnavailable {
				break
			}
			del = append(del, p)
			unavailable++
		}
		return nil, del, nil
	}
	surging := int32(0)
	var want []*nodePods
	for _, np := range nodes {
		if !np.stay || np.oldPod == nil {
			continue
		}
		switch {
		case np.newPod == nil && !available(np.oldPod):
			del = append(del, np.oldPod) // not serving: replace without surge
		case np.newPod == nil:
			want = append(want, np)
		case available(np.newPod):
			del = append(del, np.oldPod)
		default:
			surging++
		}
	}
	for _, np := range want {
		if surging >= maxSurge {
			break
		}
		create = append(create, np.node.GetMetadata().GetName())
		surging++
	}
	return create, del, nil
}
