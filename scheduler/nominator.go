package scheduler

import (
	"sync"

	"github.com/tugboat/tugboat/scheduler/framework"
)

// nominator tracks the pending pods this scheduler places that a
// preemption nominated to a node (status.nominatedNodeName), so that each
// decision keeps the room their victims free for them (see
// framework.Nominations). The pod handlers keep it in step with the
// informer; preempt adds a pod at once, before its status comes back.
type nominator struct {
	mu    sync.Mutex
	byKey map[string]nomination
}

type nomination struct {
	node string
	pi   *framework.PodInfo
}

func newNominator() *nominator { return &nominator{byKey: map[string]nomination{}} }

// set records pi as nominated to node; "" forgets it.
func (n *nominator) set(pi *framework.PodInfo, node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if node == "" {
		delete(n.byKey, pi.Key)
		return
	}
	n.byKey[pi.Key] = nomination{node: node, pi: pi}
}

// forget drops key's nomination (bound, deleted, not ours).
func (n *nominator) forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.byKey, key)
}

// snapshot is the nominations for one decision; nil when there are none
// (the common case: nothing allocated).
func (n *nominator) snapshot() framework.Nominations {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.byKey) == 0 {
		return nil
	}
	out := make(framework.Nominations, len(n.byKey))
	for _, nm := range n.byKey {
		out[nm.node] = append(out[nm.node], nm.pi)
	}
	return out
}
