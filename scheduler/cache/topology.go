package cache

import (
	"math"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/scheduler/framework"
)

// Pods are kept grouped for inter-pod affinity and topology spread: a
// group is the pods of one namespace with the same labels and the same pod
// affinity (the replicas of one ReplicaSet, typically), with how many of
// them are on each node. A decision matches each selector against each
// group once and then adds the group's per-node counts to the domains of
// those nodes, instead of matching every pod of every node; groups with
// pod affinity terms are also kept apart, so the symmetric checks (an
// existing pod's required anti-affinity refusing the incoming pod) visit
// only them. Kubernetes keeps per-node lists of the pods with affinity
// for the same reason.

type podGroup struct {
	key       string
	namespace string
	labels    map[string]string
	affinity  *framework.PodAffinity
	// terminating pods (deletionTimestamp set) still count for pod
	// affinity but not for topology spread, as in Kubernetes.
	terminating bool
	nodes       map[string]int32
	pods        int
}

// groupKey identifies the group of a pod: namespace, labels, the
// serialized pod affinity, and whether it is terminating.
func groupKey(pi *framework.PodInfo) string {
	var b strings.Builder
	if terminating(pi) {
		b.WriteByte('T')
	}
	b.WriteString(pi.Namespace)
	b.WriteByte(0)
	keys := make([]string, 0, len(pi.Labels))
	for k := range pi.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(1)
		b.WriteString(pi.Labels[k])
		b.WriteByte(1)
	}
	if pi.PodAffinity != nil && pi.Pod != nil {
		a := pi.Pod.GetSpec().GetAffinity()
		b.WriteByte(0)
		for _, m := range []proto.Message{a.GetPodAffinity(), a.GetPodAntiAffinity()} {
			raw, _ := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			b.Write(raw)
			b.WriteByte(0)
		}
	}
	return b.String()
}

func terminating(pi *framework.PodInfo) bool {
	return pi.Pod != nil && pi.Pod.GetMetadata().GetDeletionTimestamp() != nil
}

func (c *Cache) addToGroup(ps *podState) {
	g := c.groups[ps.groupKey]
	if g == nil {
		g = &podGroup{key: ps.groupKey, namespace: ps.pi.Namespace, labels: ps.pi.Labels, affinity: ps.pi.PodAffinity,
			terminating: ps.groupKey != "" && ps.groupKey[0] == 'T', nodes: map[string]int32{}}
		c.groups[ps.groupKey] = g
		if g.affinity != nil {
			c.affinityGroups[g] = struct{}{}
		}
	}
	g.nodes[ps.node]++
	g.pods++
	ps.group = g
}

func (c *Cache) removeFromGroup(ps *podState) {
	g := ps.group
	if g == nil {
		return
	}
	if g.nodes[ps.node]--; g.nodes[ps.node] <= 0 {
		delete(g.nodes, ps.node)
	}
	if g.pods--; g.pods <= 0 {
		delete(c.groups, g.key)
		delete(c.affinityGroups, g)
	}
	ps.group = nil
}

// Topology computes what the InterPodAffinity and PodTopologySpread
// plugins need to decide pi: counts of the pods its terms and
// constraints select per topology domain, and the domains where existing
// pods' terms select it. nsLabels gives a namespace's labels (for
// namespaceSelector). It returns nil when nothing constrains or scores pi.
func (c *Cache) Topology(pi *framework.PodInfo, nsLabels func(string) map[string]string) *framework.TopologyState {
	c.mu.Lock()
	defer c.mu.Unlock()
	own := pi.PodAffinity != nil || len(pi.Spread) > 0
	if !own && len(c.affinityGroups) == 0 {
		return nil
	}
	st := &framework.TopologyState{}
	if own {
		for _, g := range c.groups {
			c.visitGroup(st, pi, g, nsLabels)
		}
	} else {
		for g := range c.affinityGroups {
			c.visitGroup(st, pi, g, nsLabels)
		}
	}
	st.ExistingAntiKeys = pairKeys(st.ExistingAnti)
	st.AffinityScoreKeys = pairKeys(st.AffinityScore)
	if len(pi.Spread) > 0 {
		c.spread(st, pi)
	}
	if st.Empty() {
		return nil
	}
	return st
}

func pairKeys(m map[framework.TopologyPair]int64) []string {
	var keys []string
	for p := range m {
		if !slices.Contains(keys, p.Key) {
			keys = append(keys, p.Key)
		}
	}
	return keys
}

// addPairs adds weight for each pod of g to the domain of key of its node.
func (c *Cache) addPairs(m *map[framework.TopologyPair]int64, g *podGroup, key string, weight int64) {
	for node, n := range g.nodes {
		it := c.nodes[node]
		if it == nil || it.info.Node == nil {
			continue
		}
		v, ok := it.info.Node.Labels[key]
		if !ok {
			continue
		}
		if *m == nil {
			*m = map[framework.TopologyPair]int64{}
		}
		(*m)[framework.TopologyPair{Key: key, Value: v}] += weight * int64(n)
	}
}

// visitGroup adds what group g contributes, both ways: pi's terms
// selecting g's pods, and g's terms selecting pi (Kubernetes'
// InterPodAffinity PreFilter and PreScore, hardPodAffinityWeight 1).
func (c *Cache) visitGroup(st *framework.TopologyState, pi *framework.PodInfo, g *podGroup, nsLabels func(string) map[string]string) {
	if pa := pi.PodAffinity; pa != nil {
		if len(pa.Required) > 0 {
			all := true
			for i := range pa.Required {
				if !pa.Required[i].Matches(g.namespace, g.labels, nsLabels) {
					all = false
					break
				}
			}
			if all {
				for i := range pa.Required {
					c.addPairs(&st.AffinityCounts, g, pa.Required[i].TopologyKey, 1)
				}
			}
		}
		for i := range pa.AntiRequired {
			if t := &pa.AntiRequired[i]; t.Matches(g.namespace, g.labels, nsLabels) {
				c.addPairs(&st.AntiCounts, g, t.TopologyKey, 1)
			}
		}
		for i := range pa.Preferred {
			if t := &pa.Preferred[i]; t.Matches(g.namespace, g.labels, nsLabels) {
				c.addPairs(&st.AffinityScore, g, t.TopologyKey, t.Weight)
			}
		}
		for i := range pa.AntiPreferred {
			if t := &pa.AntiPreferred[i]; t.Matches(g.namespace, g.labels, nsLabels) {
				c.addPairs(&st.AffinityScore, g, t.TopologyKey, -t.Weight)
			}
		}
	}
	ga := g.affinity
	if ga == nil {
		return
	}
	for i := range ga.AntiRequired {
		if t := &ga.AntiRequired[i]; t.Matches(pi.Namespace, pi.Labels, nsLabels) {
			c.addPairs(&st.ExistingAnti, g, t.TopologyKey, 1)
		}
	}
	for i := range ga.Required {
		if t := &ga.Required[i]; t.Matches(pi.Namespace, pi.Labels, nsLabels) {
			c.addPairs(&st.AffinityScore, g, t.TopologyKey, 1)
		}
	}
	for i := range ga.Preferred {
		if t := &ga.Preferred[i]; t.Matches(pi.Namespace, pi.Labels, nsLabels) {
			c.addPairs(&st.AffinityScore, g, t.TopologyKey, t.Weight)
		}
	}
	for i := range ga.AntiPreferred {
		if t := &ga.AntiPreferred[i]; t.Matches(pi.Namespace, pi.Labels, nsLabels) {
			c.addPairs(&st.AffinityScore, g, t.TopologyKey, -t.Weight)
		}
	}
}

// spread counts, per constraint of pi, the pods its selector matches in
// pi's namespace per domain of its key, over the nodes that count for it
// (Kubernetes' PodTopologySpread PreFilter and PreScore): nodes that have
// the keys of all of pi's constraints of the same kind (hard or soft) and
// pass the constraint's nodeAffinityPolicy and nodeTaintsPolicy. Every
// such node's domain is present, with 0 if it has no matching pod.
func (c *Cache) spread(st *framework.TopologyState, pi *framework.PodInfo) {
	counts := pi.SpreadDomain
	st.Spread = make([]framework.SpreadState, len(pi.Spread))
	for i := range pi.Spread {
		sc := &pi.Spread[i]
		ss := &st.Spread[i]
		ss.Counts = map[string]int64{}
		// Fast path: every node with the key counts (no policy narrows it,
		// no other constraint of its kind needs another key): the domains
		// are the key's values, from the index the cache keeps, and only
		// domains with matching pods go into Counts.
		fast := !sc.HonorTaints && (!sc.HonorAffinity || (pi.NodeSelector.Empty() && pi.Affinity == nil && pi.AffinityErr == nil))
		for j := range pi.Spread {
			if o := &pi.Spread[j]; o.Hard == sc.Hard && o.TopologyKey != sc.TopologyKey {
				fast = false
			}
		}
		domains := 0
		if fast {
			domains = len(c.keyValues(sc.TopologyKey))
		} else {
			for it := c.head; it != nil; it = it.next {
				if it.info.Node == nil {
					continue
				}
				if v, ok := counts(it.info.Node, sc); ok {
					ss.Counts[v] += 0
				}
			}
			domains = len(ss.Counts)
		}
		for _, g := range c.groups {
			if g.terminating || g.namespace != pi.Namespace || !sc.Selector.Matches(g.labels) {
				continue
			}
			for node, n := range g.nodes {
				it := c.nodes[node]
				if it == nil || it.info.Node == nil {
					continue
				}
				if fast {
					if v, ok := it.info.Node.Labels[sc.TopologyKey]; ok {
						ss.Counts[v] += int64(n)
					}
				} else if v, ok := counts(it.info.Node, sc); ok {
					ss.Counts[v] += int64(n)
				}
			}
		}
		ss.Domains = domains
		ss.Min = math.MaxInt64
		for _, n := range ss.Counts {
			ss.Min = min(ss.Min, n)
		}
		if len(ss.Counts) < domains || domains == 0 || int64(domains) < sc.MinDomains {
			ss.Min = 0 // a domain without matching pods, or too few domains
		}
		ss.Weight = math.Log(float64(domains + 2))
	}
}

// keyValues is how many nodes have each value of a label key. The cache
// keeps it for the keys spread constraints have asked about, up to date as
// nodes come, change and go.
func (c *Cache) keyValues(key string) map[string]int {
	if m, ok := c.keyIndex[key]; ok {
		return m
	}
	m := map[string]int{}
	for it := c.head; it != nil; it = it.next {
		if it.info.Node != nil {
			if v, ok := it.info.Node.Labels[key]; ok {
				m[v]++
			}
		}
	}
	c.keyIndex[key] = m
	return m
}

// indexNode moves a node's label values in the key index from prev to cur
// (either may be nil).
func (c *Cache) indexNode(prev, cur *framework.Node) {
	for key, m := range c.keyIndex {
		if prev != nil {
			if v, ok := prev.Labels[key]; ok {
				if m[v]--; m[v] <= 0 {
					delete(m, v)
				}
			}
		}
		if cur != nil {
			if v, ok := cur.Labels[key]; ok {
				m[v]++
			}
		}
	}
}
