package plugins

import "github.com/tugboat/tugboat/scheduler/framework"

// NodePorts refuses nodes where a host port the pod wants is taken.
type NodePorts struct{ refused *framework.Status }

// NewNodePorts makes the filter.
func NewNodePorts() *NodePorts {
	return &NodePorts{refused: framework.NewStatus("node(s) didn't have free ports for the requested pod ports")}
}

func (f *NodePorts) Name() string                   { return "NodePorts" }
func (f *NodePorts) Events() framework.ClusterEvent { return framework.PodRemoved }

func (f *NodePorts) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	for _, want := range pi.Ports {
		for _, used := range ni.Ports {
			if want.Conflicts(used) {
				return f.refused
			}
		}
	}
	return nil
}

// MaxPods refuses nodes already running as many pods as their allocatable
// "pods" allows.
type MaxPods struct{ refused *framework.Status }

// NewMaxPods makes the filter.
func NewMaxPods() *MaxPods { return &MaxPods{refused: framework.NewStatus("Too many pods")} }

func (f *MaxPods) Name() string { return "MaxPods" }
func (f *MaxPods) Events() framework.ClusterEvent {
	return framework.PodRemoved | framework.NodeAllocatableChanged
}

func (f *MaxPods) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	if ni.NumPods+1 > ni.Node.MaxPods {
		return f.refused
	}
	return nil
}

// NodeResourcesFit refuses nodes whose allocatable cpu, memory or
// ephemeral storage, minus what the pods bound or assumed there request,
// is less than the pod requests. A resource the pod does not request is
// not checked. Every insufficient resource is a reason of its own.
type NodeResourcesFit struct {
	// refused[mask]: bit 0 cpu, bit 1 memory, bit 2 ephemeral-storage.
	refused [8]*framework.Status
}

// NewNodeResourcesFit makes the filter.
func NewNodeResourcesFit() *NodeResourcesFit {
	f := &NodeResourcesFit{}
	names := []string{"cpu", "memory", "ephemeral-storage"}
	for mask := 1; mask < 8; mask++ {
		var reasons []string
		for bit, n := range names {
			if mask&(1<<bit) != 0 {
				reasons = append(reasons, "Insufficient "+n)
			}
		}
		f.refused[mask] = framework.NewStatus(reasons...)
	}
	return f
}

func (f *NodeResourcesFit) Name() string { return "NodeResourcesFit" }
func (f *NodeResourcesFit) Events() framework.ClusterEvent {
	return framework.PodRemoved | framework.NodeAllocatableChanged
}

func (f *NodeResourcesFit) Filter(pi *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	req, used, alloc := pi.Request, ni.Requested, ni.Node.Allocatable
	mask := 0
	if req.MilliCPU > 0 && used.MilliCPU+req.MilliCPU > alloc.MilliCPU {
		mask |= 1
	}
	if req.Memory > 0 && used.Memory+req.Memory > alloc.Memory {
		mask |= 2
	}
	if req.EphemeralStorage > 0 && used.EphemeralStorage+req.EphemeralStorage > alloc.EphemeralStorage {
		mask |= 4
	}
	return f.refused[mask] // nil for mask 0
}
