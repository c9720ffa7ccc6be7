// Package cache is the scheduler's model of the cluster: every node and
// what the pods on it use, fed by the node and pod informers, plus the pods
// the scheduler has assumed onto a node but whose binding it has not yet
// seen come back through the informer.
//
// Loop: informer handlers call AddNode/RemoveNode and AddPod/RemovePod; the
// scheduling goroutine calls UpdateSnapshot at the start of each decision,
// then AssumePod for the node it picked; the binder calls FinishBinding
// after a successful bind or ForgetPod after a failed one. Run expires
// assumed pods whose binding was never observed.
//
// Contract: all methods are safe for concurrent use. UpdateSnapshot copies
// only the nodes changed since the snapshot's last update (the cache keeps
// nodes in most-recently-changed order), so a decision costs O(changes),
// not O(nodes). An assumed pod counts on its node from AssumePod until the
// informer reports it bound (confirmed), ForgetPod, or expiry.
package cache

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// Config tunes a cache.
type Config struct {
	// AssumedTTL is how long an assumed pod whose bind succeeded may wait
	// for the informer to report it before it is dropped (default 30s).
	AssumedTTL time.Duration
	Logger     *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// Cache is the model. The zero value is not usable: use New.
type Cache struct {
	ttl time.Duration
	log *slog.Logger
	now func() time.Time

	mu   sync.Mutex
	gen  int64 // bumped on every node change
	head *item // most recently changed first
	// nodeSetGen is bumped when the set of candidate nodes changes.
	nodeSetGen int64
	nodes      map[string]*item
	numNodes   int // items with a Node
	pods       map[string]*podState
	assumed    int
	// observed is the newest pod version applied to the cache; every pod
	// change at or before it is applied (the informer delivers in order).
	observed int64
	// groups are the pods by namespace, labels and pod affinity, and
	// affinityGroups those with pod affinity terms (topology.go).
	groups         map[string]*podGroup
	affinityGroups map[*podGroup]struct{}
	// keyIndex counts nodes per value of the label keys spread
	// constraints use (topology.go).
	keyIndex map[string]map[string]int
}

// item is a node in the recency list.
type item struct {
	info       framework.NodeInfo
	name       string
	prev, next *item
}

type podState struct {
	pi       *framework.PodInfo
	node     string
	assumed  bool
	bound    bool      // assumed and the bind call succeeded
	deadline time.Time // for a bound assumed pod: when it expires
	groupKey string
	group    *podGroup
}

// New makes an empty cache.
func New(cfg Config) *Cache {
	if cfg.AssumedTTL <= 0 {
		cfg.AssumedTTL = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Cache{ttl: cfg.AssumedTTL, log: cfg.Logger, now: cfg.Now, nodes: map[string]*item{}, pods: map[string]*podState{},
		groups: map[string]*podGroup{}, affinityGroups: map[*podGroup]struct{}{},
		keyIndex: map[string]map[string]int{}}
}

// touch marks it changed: a new generation, moved to the list's head.
func (c *Cache) touch(it *item) {
	c.gen++
	it.info.Generation = c.gen
	if c.head == it {
		return
	}
	c.unlink(it)
	it.next = c.head
	if c.head != nil {
		c.head.prev = it
	}
	c.head = it
}

func (c *Cache) unlink(it *item) {
	if it.prev != nil {
		it.prev.next = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	}
	if c.head == it {
		c.head = it.next
	}
	it.prev, it.next = nil, nil
}

// nodeItem returns the item of a node, making a node-less one for pods
// seen before their node.
func (c *Cache) nodeItem(name string) *item {
	it := c.nodes[name]
	if it == nil {
		it = &item{name: name}
		c.nodes[name] = it
	}
	return it
}

// removeIfEmpty drops a node-less item once no pod refers to it.
func (c *Cache) removeIfEmpty(it *item) {
	if it.info.Node == nil && it.info.NumPods == 0 {
		c.unlink(it)
		delete(c.nodes, it.name)
	}
}

// AddNode adds or updates a node. It returns the node's previous facts
// (nil if it is new) and its new ones, so callers can tell what changed.
func (c *Cache) AddNode(n *v1.Node) (prev, cur *framework.Node) {
	cur = framework.NewNode(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.nodeItem(cur.Name)
	prev = it.info.Node
	it.info.Node = cur
	c.indexNode(prev, cur)
	if prev == nil {
		c.nodeSetGen++
		c.numNodes++
	}
	c.touch(it)
	return prev, cur
}

// RemoveNode removes a node; pods still bound to it keep being accounted
// until they are removed, but the node is no longer a candidate.
func (c *Cache) RemoveNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.nodes[name]
	if it == nil || it.info.Node == nil {
		return
	}
	c.indexNode(it.info.Node, nil)
	it.info.Node = nil
	c.nodeSetGen++
	c.numNodes--
	c.touch(it)
	c.removeIfEmpty(it)
}

// AddPod records a pod the informer reports bound to a node (added or
// updated). An assumed pod is confirmed; a pod whose node differs from
// the assumed one is moved.
func (c *Cache) AddPod(pod *v1.Pod) {
	key, node := v1.Key(pod), pod.GetSpec().GetNodeName()
	if node == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.pods[key]; ps != nil {
		if ps.assumed {
			c.assumed--
			ps.assumed, ps.bound = false, false
		}
		if ps.node == node && ps.pi.UID == pod.GetMetadata().GetUid() && maps.Equal(ps.pi.Labels, pod.GetMetadata().GetLabels()) &&
			(ps.groupKey != "" && ps.groupKey[0] == 'T') == (pod.GetMetadata().GetDeletionTimestamp() != nil) {
			return // requests, ports and affinity of a bound pod never change; labels and deletion do
		}
		c.removeLocked(key, ps)
	}
	pi := framework.NewPodInfo(pod)
	c.addLocked(key, &podState{pi: slim(pi), node: node, groupKey: groupKey(pi)})
}

// slim keeps what accounting needs of a PodInfo and drops the pod object,
// which the informer holds already (its newest version; keeping the one a
// PodInfo was built from would double the memory of every bound pod).
func slim(pi *framework.PodInfo) *framework.PodInfo {
	return &framework.PodInfo{
		Key: pi.Key, Request: pi.Request, NonZeroRequest: pi.NonZeroRequest, Ports: pi.Ports, Owner: pi.Owner,
		UID: pi.UID, Namespace: pi.Namespace, Labels: pi.Labels, PodAffinity: pi.PodAffinity,
		Priority: pi.Priority, StartTime: pi.StartTime,
	}
}

func (c *Cache) addLocked(key string, ps *podState) {
	c.pods[key] = ps
	c.addToGroup(ps)
	it := c.nodeItem(ps.node)
	it.info.AddPod(ps.pi)
	c.touch(it)
}

func (c *Cache) removeLocked(key string, ps *podState) {
	delete(c.pods, key)
	c.removeFromGroup(ps)
	if ps.assumed {
		c.assumed--
	}
	if it := c.nodes[ps.node]; it != nil {
		it.info.RemovePod(ps.pi)
		c.touch(it)
		c.removeIfEmpty(it)
	}
}

// Observe records that every pod change up to revision rv is applied to
// the cache. Call it after applying the change with that revision.
func (c *Cache) Observe(rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.observed = max(c.observed, rv)
}

// RemovePod forgets a pod that was deleted or finished (bound or assumed).
// It reports whether the pod was counted on a node.
func (c *Cache) RemovePod(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pods[key]
	if ps == nil {
		return false
	}
	c.removeLocked(key, ps)
	return true
}

// AssumePod counts pi on node before the binding is written, so the next
// decision sees the resources as used. It fails if the pod is already
// counted somewhere.
func (c *Cache) AssumePod(pi *framework.PodInfo, node string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.pods[pi.Key]; ps != nil {
		return fmt.Errorf("pod %s is already on node %s in the cache", pi.Key, ps.node)
	}
	c.addLocked(pi.Key, &podState{pi: slim(pi), node: node, assumed: true, groupKey: groupKey(pi)})
	c.assumed++
	return nil
}

// FinishBinding says the bind of an assumed pod succeeded: it stays
// counted until the informer confirms it, or until AssumedTTL passes.
func (c *Cache) FinishBinding(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps := c.pods[key]; ps != nil && ps.assumed {
		ps.bound = true
		ps.deadline = c.now().Add(c.ttl)
	}
}

// ForgetPod rolls back an assumption whose bind failed. It reports whether
// the pod was assumed (and so resources were freed).
func (c *Cache) ForgetPod(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pods[key]
	if ps == nil || !ps.assumed {
		return false
	}
	c.removeLocked(key, ps)
	return true
}

// IsAssumed reports whether key is assumed and not yet confirmed.
func (c *Cache) IsAssumed(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pods[key]
	return ps != nil && ps.assumed
}

// Expire drops assumed pods whose bind succeeded more than AssumedTTL ago
// without the informer reporting them; it returns how many.
func (c *Cache) Expire() int {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for key, ps := range c.pods {
		if ps.assumed && ps.bound && now.After(ps.deadline) {
			c.log.Warn("assumed pod expired: its binding was never observed", "pod", key, "node", ps.node)
			c.removeLocked(key, ps)
			n++
		}
	}
	return n
}

// Run expires assumed pods every second until ctx ends.
func (c *Cache) Run(ctx context.Context) error {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.Expire()
		}
	}
}

// PodsByNode lists the bound and assumed pods of every node (the slim
// PodInfos the cache keeps: key, labels, requests, ports, priority), for
// preemption. Assumed pods are left out: they are being bound, and their
// binder would not notice a deletion.
func (c *Cache) PodsByNode() map[string][]*framework.PodInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]*framework.PodInfo{}
	for _, ps := range c.pods {
		if !ps.assumed {
			out[ps.node] = append(out[ps.node], ps.pi)
		}
	}
	return out
}

// Stats are the cache's sizes.
type Stats struct {
	Nodes, Pods, Assumed int
}

// Stats counts nodes (with a Node object), pods and assumed pods.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Nodes: c.numNodes, Pods: len(c.pods), Assumed: c.assumed}
}

// NodeInfo returns a copy of a node's current accounting.
func (c *Cache) NodeInfo(name string) (framework.NodeInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.nodes[name]
	if it == nil {
		return framework.NodeInfo{}, false
	}
	var out framework.NodeInfo
	it.info.CopyInto(&out)
	return out, true
}

// Snapshot is a consistent copy of the cache's nodes for one scheduling
// goroutine. It is not safe for concurrent use.
type Snapshot struct {
	infos      map[string]*framework.NodeInfo
	list       []*framework.NodeInfo
	gen        int64
	nodeSetGen int64
	observed   int64
}

// NewSnapshot makes an empty snapshot.
func NewSnapshot() *Snapshot {
	return &Snapshot{infos: map[string]*framework.NodeInfo{}, nodeSetGen: -1}
}

// Nodes are the candidate nodes (those with a Node object), in name order.
func (s *Snapshot) Nodes() []*framework.NodeInfo { return s.list }

// Observed is the newest pod revision the snapshot reflects: it counts
// every pod bound at or before it (plus the pods assumed by this cache).
func (s *Snapshot) Observed() int64 { return s.observed }

// Get returns a node's info in the snapshot.
func (s *Snapshot) Get(name string) *framework.NodeInfo { return s.infos[name] }

// UpdateSnapshot brings s up to date with the cache, copying only the nodes
// changed since s was last updated.
func (c *Cache) UpdateSnapshot(s *Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for it := c.head; it != nil && it.info.Generation > s.gen; it = it.next {
		dst := s.infos[it.name]
		if dst == nil {
			dst = &framework.NodeInfo{}
			s.infos[it.name] = dst
		}
		it.info.CopyInto(dst)
	}
	s.gen = c.gen
	s.observed = c.observed
	if s.nodeSetGen == c.nodeSetGen {
		return
	}
	for name := range s.infos {
		if it := c.nodes[name]; it == nil || it.info.Node == nil {
			delete(s.infos, name)
		}
	}
	clear(s.list)
	s.list = s.list[:0]
	for _, ni := range s.infos {
		s.list = append(s.list, ni)
	}
	sort.Slice(s.list, func(i, j int) bool { return s.list[i].Node.Name < s.list[j].Node.Name })
	s.nodeSetGen = c.nodeSetGen
}
