package plugins

import (
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// VolumeBinding refuses nodes the pod's PersistentVolumeClaims rule out:
// every claim must exist and, with Immediate binding, be bound; a node must
// match the node affinity of each bound volume (a local volume: its node);
// and for each WaitForFirstConsumer claim either a provisioner can make a
// volume there (local-path: any node) or an available volume fits there;
// a ReadWriteOncePod claim must not be in use by another pod.
type VolumeBinding struct{ conflict, noVolume *framework.Status }

// NewVolumeBinding makes the filter.
func NewVolumeBinding() *VolumeBinding {
	return &VolumeBinding{
		conflict: framework.NewStatus("node(s) had volume node affinity conflict"),
		noVolume: framework.NewStatus("node(s) didn't find available persistent volumes to bind"),
	}
}

func (f *VolumeBinding) Name() string { return "VolumeBinding" }

// Events: claims and volumes changing, or a pod going (it may have held a
// ReadWriteOncePod claim).
func (f *VolumeBinding) Events() framework.ClusterEvent {
	return framework.VolumeChanged | framework.PodRemoved
}

func (f *VolumeBinding) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	v := pi.Volumes
	if v == nil {
		return nil
	}
	if v.Unschedulable != nil {
		return v.Unschedulable
	}
	for _, terms := range v.Bound {
		if !labels.NodeSelectorMatches(terms, ni.Node.Labels, ni.Node.Name) {
			return f.conflict
		}
	}
	for _, candidates := range v.Waiting {
		if candidates == nil {
			continue // provisioned where the pod goes
		}
		ok := false
		for _, terms := range candidates {
			if terms == nil || labels.NodeSelectorMatches(terms, ni.Node.Labels, ni.Node.Name) {
				ok = true
				break
			}
		}
		if !ok {
			return f.noVolume
		}
	}
	return nil
}
