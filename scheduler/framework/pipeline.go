package framework

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// Sampling bounds (kube-scheduler's): clusters smaller than
// minFeasibleNodesToFind are always searched whole; the adaptive
// percentage never goes below minFeasiblePercentage.
const (
	minFeasibleNodesToFind = 100
	minFeasiblePercentage  = 5
	// filterChunk is how many nodes a filter worker takes at a time.
	filterChunk = 128
)

// PipelineConfig is what a Pipeline runs.
type PipelineConfig struct {
	// Filters run in order; a node is refused by the first that refuses it.
	Filters []FilterPlugin
	Scores  []WeightedScore
	// PercentageOfNodesToScore: once this share of the nodes is found
	// feasible, stop filtering and score those (at least 100 nodes). 0 is
	// adaptive (50% at 100 nodes down to 5% at 5,625 nodes and more);
	// 100 looks at every node.
	PercentageOfNodesToScore int
	// Parallelism is how many goroutines filter the nodes of one decision.
	Parallelism int
	// Seed seeds the tie-breaking random source (0: random).
	Seed uint64
	// NamespaceLabels gives a namespace's labels, for the namespaceSelector
	// of pod affinity terms when nominated pods are counted (nil: none).
	NamespaceLabels func(ns string) map[string]string
}

// Result is a successful decision.
type Result struct {
	Node      *NodeInfo
	Evaluated int // nodes filtered
	Feasible  int // nodes that passed and were scored
}

// Pipeline picks a node for a pod: filter (a rotating window of the nodes,
// until enough fit), score the feasible ones, take the best, breaking ties
// at random. It reuses its buffers between decisions, so it is not safe
// for concurrent use: one scheduling goroutine owns it.
type Pipeline struct {
	cfg    PipelineConfig
	events []ClusterEvent // per filter: its Events() | NodeAdded
	rnd    *rand.Rand

	next int // where the next decision starts in the node list
	// nominated is the decision's Nominations (Schedule's argument).
	nominated Nominations
	feasible  []*NodeInfo
	workers   [][]*NodeInfo // per filter worker
	scores    [][]int64     // per score plugin
	total     []int64
}

// NewPipeline makes a pipeline.
func NewPipeline(cfg PipelineConfig) *Pipeline {
	if cfg.Parallelism < 1 {
		cfg.Parallelism = 1
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	p := &Pipeline{cfg: cfg, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	for _, f := range cfg.Filters {
		p.events = append(p.events, f.Events()|NodeAdded)
	}
	p.workers = make([][]*NodeInfo, cfg.Parallelism)
	p.scores = make([][]int64, len(cfg.Scores))
	return p
}

// Filters are the pipeline's filters, in order.
func (p *Pipeline) Filters() []FilterPlugin { return p.cfg.Filters }

// NumFeasibleNodesToFind is how many feasible nodes a decision over n
// nodes looks for before it stops filtering.
func (p *Pipeline) NumFeasibleNodesToFind(n int) int {
	pct := p.cfg.PercentageOfNodesToScore
	if n < minFeasibleNodesToFind || pct >= 100 {
		return n
	}
	if pct <= 0 {
		pct = max(50-n/125, minFeasiblePercentage)
	}
	return max(n*pct/100, minFeasibleNodesToFind)
}

// Nominations are the pending pods a preemption has nominated to a node
// (status.nominatedNodeName), by node name: the room their victims free
// is theirs. A decision counts, on each node, the nominated pods of at
// least the deciding pod's priority (not itself) as if they ran there —
// their requests, pod count, host ports, and the inter-pod affinity and
// topology spread counts of the filters (Kubernetes' "filter with
// nominated pods", RunFilterPluginsWithNominatedPods) — and the node must
// fit the pod both with and without them. nil: no pod is nominated
// anywhere.
type Nominations map[string][]*PodInfo

// Schedule picks a node for pi among nodes, or says why none fits. nodes
// must not change during the call; their order should be stable between
// calls so that the rotating window spreads decisions over every node.
// A pod with status.nominatedNodeName is tried on that node first and
// goes there if it fits (Kubernetes' evaluateNominatedNode).
func (p *Pipeline) Schedule(pi *PodInfo, nodes []*NodeInfo, nominated Nominations) (Result, *FitError) {
	n := len(nodes)
	if n == 0 {
		return Result{}, &FitError{Reasons: map[string]int{}, Events: AllEvents}
	}
	p.nominated = nominated
	defer func() { p.nominated = nil }()
	if want := pi.Pod.GetStatus().GetNominatedNodeName(); want != "" {
		for _, ni := range nodes {
			if ni.Name() == want {
				if p.fits(pi, ni) {
					return Result{Node: ni, Evaluated: 1, Feasible: 1}, nil
				}
				break
			}
		}
	}
	want := p.NumFeasibleNodesToFind(n)
	start := p.next % n
	processed := p.findFeasible(pi, nodes, start, want)
	p.next = (start + processed) % n
	if len(p.feasible) == 0 {
		return Result{}, p.diagnose(pi, nodes)
	}
	res := Result{Evaluated: processed, Feasible: len(p.feasible)}
	if len(p.feasible) == 1 || len(p.cfg.Scores) == 0 {
		res.Node = p.feasible[0]
	} else {
		res.Node = p.pickBest(pi)
	}
	clear(p.feasible) // do not keep NodeInfos reachable between decisions
	return res, nil
}

// fits runs the filters until one refuses: on the node with the pods
// nominated to it that are at least as important as pi, then as it is.
func (p *Pipeline) fits(pi *PodInfo, ni *NodeInfo) bool {
	if piWith, with := p.withNominated(pi, ni); with != nil && p.filter(piWith, with) != nil {
		return false
	}
	return p.filter(pi, ni) == nil
}

// filter runs the filters on ni; the first refusal's status, nil if none.
func (p *Pipeline) filter(pi *PodInfo, ni *NodeInfo) *Status {
	for _, f := range p.cfg.Filters {
		if st := f.Filter(pi, ni); st != nil {
			return st
		}
	}
	return nil
}

// withNominated is a copy of ni with the nominated pods that pi must make
// room for added, and pi with its topology counts including them; nil
// when there are none (the common case: nothing copied).
func (p *Pipeline) withNominated(pi *PodInfo, ni *NodeInfo) (*PodInfo, *NodeInfo) {
	var with *NodeInfo
	var added []*PodInfo
	for _, np := range p.nominated[ni.Name()] {
		if np.Key == pi.Key || np.Priority < pi.Priority {
			continue
		}
		if with == nil {
			with = &NodeInfo{}
			ni.CopyInto(with)
		}
		with.AddPod(np)
		added = append(added, np)
	}
	if with == nil {
		return pi, nil
	}
	if ts := pi.Topology.WithPods(pi, ni.Node, added, p.cfg.NamespaceLabels); ts != pi.Topology {
		cp := *pi
		cp.Topology = ts
		pi = &cp
	}
	return pi, with
}

// findFeasible fills p.feasible with up to about want nodes that fit,
// starting at nodes[start] and wrapping; it returns how many nodes it
// filtered.
func (p *Pipeline) findFeasible(pi *PodInfo, nodes []*NodeInfo, start, want int) int {
	n := len(nodes)
	p.feasible = p.feasible[:0]
	if p.cfg.Parallelism == 1 || n < 2*filterChunk {
		i := 0
		for ; i < n && len(p.feasible) < want; i++ {
			if ni := nodes[(start+i)%n]; p.fits(pi, ni) {
				p.feasible = append(p.feasible, ni)
			}
		}
		return i
	}
	var nextChunk, found, processed atomic.Int64
	var wg sync.WaitGroup
	work := func(w int) {
		buf := p.workers[w][:0]
		for found.Load() < int64(want) {
			lo := int(nextChunk.Add(1)-1) * filterChunk
			if lo >= n {
				break
			}
			hi := min(lo+filterChunk, n)
			before := len(buf)
			for i := lo; i < hi; i++ {
				if ni := nodes[(start+i)%n]; p.fits(pi, ni) {
					buf = append(buf, ni)
				}
			}
			found.Add(int64(len(buf) - before)) // once per chunk: no cache-line ping-pong
			processed.Add(int64(hi - lo))
		}
		p.workers[w] = buf
	}
	for w := 1; w < p.cfg.Parallelism; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); work(w) }()
	}
	work(0)
	wg.Wait()
	for w, buf := range p.workers {
		p.feasible = append(p.feasible, buf...)
		clear(buf)
		p.workers[w] = buf[:0]
	}
	if len(p.feasible) > want {
		clear(p.feasible[want:])
		p.feasible = p.feasible[:want] // whole chunks overshoot: score no more than asked
	}
	return int(processed.Load())
}

// diagnose runs every filter on every node to say why none fits (the slow
// path, taken only for unschedulable pods).
func (p *Pipeline) diagnose(pi *PodInfo, nodes []*NodeInfo) *FitError {
	fe := &FitError{NumNodes: len(nodes), Reasons: map[string]int{}}
	for _, ni := range nodes {
		if piWith, with := p.withNominated(pi, ni); with != nil && p.diagnoseNode(fe, piWith, with) {
			continue
		}
		p.diagnoseNode(fe, pi, ni)
	}
	return fe
}

// diagnoseNode adds the first refusal of pi on ni to fe; it says whether
// there was one.
func (p *Pipeline) diagnoseNode(fe *FitError, pi *PodInfo, ni *NodeInfo) bool {
	for i, f := range p.cfg.Filters {
		if st := f.Filter(pi, ni); st != nil {
			for _, r := range st.Reasons() {
				fe.Reasons[r]++
			}
			fe.Events |= p.events[i]
			return true
		}
	}
	return false
}

// pickBest scores p.feasible and returns the best node, ties at random.
func (p *Pipeline) pickBest(pi *PodInfo) *NodeInfo {
	m := len(p.feasible)
	p.total = grow(p.total, m)
	clear(p.total)
	for s, ws := range p.cfg.Scores {
		sc := grow(p.scores[s], m)
		p.scores[s] = sc
		for i, ni := range p.feasible {
			sc[i] = ws.Plugin.Score(pi, ni)
		}
		if nz, ok := ws.Plugin.(Normalizer); ok {
			nz.Normalize(pi, sc)
		}
		for i := range sc {
			p.total[i] += ws.Weight * sc[i]
		}
	}
	best, ties := 0, 0
	for i := range p.total {
		switch {
		case i == 0 || p.total[i] > p.total[best]:
			best, ties = i, 1
		case p.total[i] == p.total[best]:
			ties++
			if p.rnd.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return p.feasible[best]
}

func grow(s []int64, n int) []int64 {
	if cap(s) < n {
		return make([]int64, n, n+n/4)
	}
	return s[:n]
}
