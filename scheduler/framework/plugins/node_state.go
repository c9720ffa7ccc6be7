// Package plugins holds the scheduler's filter and score plugins and the
// registry that builds them by name for --filters and --scores.
//
// Each filter is a tiny type answering one question about one node, with
// the reason users read in "0/N nodes are available: ..."; the statuses it
// returns are built once in its constructor (or per node, for taints), so
// filtering never allocates.
package plugins

import (
	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// Taints the node lifecycle controller puts on nodes; a pod tolerating one
// may go to a node in that state (as DaemonSet pods do).
const (
	TaintNotReady      = "node.kubernetes.io/not-ready"
	TaintUnschedulable = "node.kubernetes.io/unschedulable"
)

// NodeReady refuses nodes whose Ready condition is not True, unless the pod
// tolerates the node.kubernetes.io/not-ready taint.
type NodeReady struct {
	refused *framework.Status
	taint   *v1.Taint
}

// NewNodeReady makes the filter.
func NewNodeReady() *NodeReady {
	return &NodeReady{
		refused: framework.NewStatus("node(s) were not ready"),
		taint:   &v1.Taint{Key: TaintNotReady, Effect: "NoSchedule"},
	}
}

func (f *NodeReady) Name() string                   { return "NodeReady" }
func (f *NodeReady) Events() framework.ClusterEvent { return framework.NodeReadyChanged }

func (f *NodeReady) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if ni.Node.Ready || v1.TolerationsTolerate(pi.Tolerations, f.taint) {
		return nil
	}
	return f.refused
}

// NodeUnschedulable refuses cordoned nodes (spec.unschedulable), unless the
// pod tolerates the node.kubernetes.io/unschedulable taint.
type NodeUnschedulable struct {
	refused *framework.Status
	taint   *v1.Taint
}

// NewNodeUnschedulable makes the filter.
func NewNodeUnschedulable() *NodeUnschedulable {
	return &NodeUnschedulable{
		refused: framework.NewStatus("node(s) were unschedulable"),
		taint:   &v1.Taint{Key: TaintUnschedulable, Effect: "NoSchedule"},
	}
}

func (f *NodeUnschedulable) Name() string { return "NodeUnschedulable" }
func (f *NodeUnschedulable) Events() framework.ClusterEvent {
	return framework.NodeUnschedulableChanged
}

func (f *NodeUnschedulable) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if !ni.Node.Unschedulable || v1.TolerationsTolerate(pi.Tolerations, f.taint) {
		return nil
	}
	return f.refused
}

// TaintToleration refuses nodes with a NoSchedule or NoExecute taint the
// pod does not tolerate; the reason names the first such taint.
type TaintToleration struct{}

// NewTaintToleration makes the filter.
func NewTaintToleration() *TaintToleration { return &TaintToleration{} }

func (f *TaintToleration) Name() string                   { return "TaintToleration" }
func (f *TaintToleration) Events() framework.ClusterEvent { return framework.NodeTaintsChanged }

func (f *TaintToleration) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for i, t := range ni.Node.Taints {
		if t.Effect != "NoSchedule" && t.Effect != "NoExecute" {
			continue // PreferNoSchedule only steers, it never refuses
		}
		if !v1.TolerationsTolerate(pi.Tolerations, t) {
			return ni.Node.TaintStatus(i)
		}
	}
	return nil
}

// NodeAffinity refuses nodes whose labels do not match the pod's
// nodeSelector or its required node affinity.
type NodeAffinity struct{ refused *framework.Status }

// NewNodeAffinity makes the filter.
func NewNodeAffinity() *NodeAffinity {
	return &NodeAffinity{refused: framework.NewStatus("node(s) didn't match Pod's node affinity/selector")}
}

func (f *NodeAffinity) Name() string                   { return "NodeAffinity" }
func (f *NodeAffinity) Events() framework.ClusterEvent { return framework.NodeLabelsChanged }

func (f *NodeAffinity) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if pi.AffinityErr != nil || !pi.NodeSelector.Matches(ni.Node.Labels) {
		return f.refused
	}
	if pi.Affinity == nil {
		return nil
	}
	if labels.NodeSelectorMatches(pi.Affinity, ni.Node.Labels, ni.Node.Name) {
		return nil
	}
	return f.refused
}
