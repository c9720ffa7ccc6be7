package framework

// MaxNodeScore is the best score a (normalized) score plugin gives.
const MaxNodeScore = 100

// ClusterEvent is a set of changes in the cluster that can turn a filter's
// refusal into a pass. The queue retries an unschedulable pod only on the
// events its refusing filters listed.
type ClusterEvent uint32

// The events the scheduler observes.
const (
	// NodeAdded: a node appeared (every filter may pass on a new node).
	NodeAdded ClusterEvent = 1 << iota
	NodeLabelsChanged
	NodeTaintsChanged
	NodeUnschedulableChanged
	NodeReadyChanged
	NodeAllocatableChanged
	// PodRemoved: a pod bound to a node was deleted or finished, or an
	// assumed pod was forgotten: its resources and ports are free again.
	PodRemoved
	// VolumeChanged: a claim, volume or class changed (bound, created).
	VolumeChanged
	// PodAdded: a pod was bound to a node (or assumed there), or a bound
	// pod's labels changed: pod affinity and spread may now pass.
	PodAdded
	// ResourceClaimChanged: a ResourceClaim or DeviceClass appeared,
	// changed or went (dynamic resource allocation).
	ResourceClaimChanged
	// AllEvents is every event.
	AllEvents ClusterEvent = 1<<iota - 1
)

// FilterPlugin says whether a pod may run on a node.
type FilterPlugin interface {
	// Name is the plugin's name in --filters.
	Name() string
	// Filter returns nil if the pod may run on the node, else a Status
	// with the reason(s). It must not allocate when the node fits.
	Filter(pi *PodInfo, ni *NodeInfo) *Status
	// Events are the changes that may turn a refusal into a pass
	// (NodeAdded is always implied).
	Events() ClusterEvent
}

// ScorePlugin rates a node that passed every filter; higher is better.
type ScorePlugin interface {
	// Name is the plugin's name in --scores.
	Name() string
	// Score returns a value in [0, MaxNodeScore], or a raw value the
	// plugin's Normalize maps into that range.
	Score(pi *PodInfo, ni *NodeInfo) int64
}

// Normalizer is implemented by score plugins whose raw scores only make
// sense relative to each other (a count of pods, say): Normalize maps the
// scores of all feasible nodes into [0, MaxNodeScore] in place.
type Normalizer interface {
	Normalize(pi *PodInfo, scores []int64)
}

// WeightedScore is a score plugin and its weight in the total.
type WeightedScore struct {
	Plugin ScorePlugin
	Weight int64
}
