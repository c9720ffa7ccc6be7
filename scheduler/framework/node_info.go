package framework

import (
	"fmt"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// DefaultMaxPods is a node's pod limit when its allocatable does not say
// (the kubelet's default).
const DefaultMaxPods = 110

// Node is what the scheduler reads from a Node object, computed once per
// version of the node. Immutable.
type Node struct {
	Name          string
	Obj           *v1.Node // shared with the informer: read only
	Labels        map[string]string
	Taints        []*v1.Taint
	Allocatable   Resources
	MaxPods       int64
	Ready         bool
	Unschedulable bool
	// taintStatus[i] is the refusal for an untolerated Taints[i], built once
	// so that filtering never formats strings.
	taintStatus []*Status
}

// NewNode computes a node's scheduling facts. A resource missing from
// status.allocatable falls back to status.capacity.
func NewNode(n *v1.Node) *Node {
	st := n.GetStatus()
	get := func(name string) string {
		if v, ok := st.GetAllocatable()[name]; ok {
			return v
		}
		return st.GetCapacity()[name]
	}
	node := &Node{
		Name:   n.GetMetadata().GetName(),
		Obj:    n,
		Labels: n.GetMetadata().GetLabels(),
		Taints: n.GetSpec().GetTaints(),
		Allocatable: Resources{
			MilliCPU:         quantity(get("cpu"), true),
			Memory:           quantity(get("memory"), false),
			EphemeralStorage: quantity(get("ephemeral-storage"), false),
		},
		MaxPods:       DefaultMaxPods,
		Unschedulable: n.GetSpec().GetUnschedulable(),
	}
	if p := get("pods"); p != "" {
		node.MaxPods = quantity(p, false)
	}
	for _, c := range st.GetConditions() {
		if c.Type == "Ready" {
			node.Ready = c.Status == "True"
		}
	}
	node.taintStatus = make([]*Status, len(node.Taints))
	for i, t := range node.Taints {
		node.taintStatus[i] = NewStatus(fmt.Sprintf("node(s) had untolerated taint {%s: %s}", t.Key, t.Value))
	}
	return node
}

// TaintStatus is the refusal for an untolerated Taints[i].
func (n *Node) TaintStatus(i int) *Status { return n.taintStatus[i] }

// OwnerCount is how many pods of one controller run on a node.
type OwnerCount struct {
	UID   string
	Count int32
}

// NodeInfo is a node plus what the pods bound or assumed on it use.
type NodeInfo struct {
	// Node is nil while pods are known on a node the informer has not
	// delivered (or has deleted): such a NodeInfo is never a candidate.
	Node             *Node
	Requested        Resources
	NonZeroRequested Resources
	NumPods          int64
	// Ports has one entry per host port of each pod on the node.
	Ports []HostPort
	// Owners counts the pods on the node per controller UID.
	Owners []OwnerCount
	// Generation is bumped by the cache on every change.
	Generation int64
}

// AddPod accounts for a pod placed on the node.
func (n *NodeInfo) AddPod(pi *PodInfo) {
	n.Requested.Add(pi.Request)
	n.NonZeroRequested.Add(pi.NonZeroRequest)
	n.NumPods++
	n.Ports = append(n.Ports, pi.Ports...)
	if pi.Owner != "" {
		for i := range n.Owners {
			if n.Owners[i].UID == pi.Owner {
				n.Owners[i].Count++
				return
			}
		}
		n.Owners = append(n.Owners, OwnerCount{UID: pi.Owner, Count: 1})
	}
}

// RemovePod undoes AddPod for the same PodInfo.
func (n *NodeInfo) RemovePod(pi *PodInfo) {
	n.Requested.Sub(pi.Request)
	n.NonZeroRequested.Sub(pi.NonZeroRequest)
	n.NumPods--
	for _, p := range pi.Ports {
		for i := range n.Ports {
			if n.Ports[i] == p {
				last := len(n.Ports) - 1
				n.Ports[i] = n.Ports[last]
				n.Ports = n.Ports[:last]
				break
			}
		}
	}
	if pi.Owner != "" {
		for i := range n.Owners {
			if n.Owners[i].UID == pi.Owner {
				n.Owners[i].Count--
				if n.Owners[i].Count <= 0 {
					last := len(n.Owners) - 1
					n.Owners[i] = n.Owners[last]
					n.Owners = n.Owners[:last]
				}
				return
			}
		}
	}
}

// OwnerCount is the number of pods of controller uid on the node.
func (n *NodeInfo) OwnerCount(uid string) int32 {
	for i := range n.Owners {
		if n.Owners[i].UID == uid {
			return n.Owners[i].Count
		}
	}
	return 0
}

// Name is the node's name ("" for a NodeInfo without a node).
func (n *NodeInfo) Name() string {
	if n.Node == nil {
		return ""
	}
	return n.Node.Name
}

// CopyInto makes dst equal to n, reusing dst's slices (no allocation once
// they have grown).
func (n *NodeInfo) CopyInto(dst *NodeInfo) {
	ports, owners := dst.Ports, dst.Owners
	*dst = *n
	dst.Ports = append(ports[:0], n.Ports...)
	dst.Owners = append(owners[:0], n.Owners...)
}
