package framework

import (
	"math"
	"sort"
)

// Preemption (Kubernetes' DefaultPreemption PostFilter), the pure part: for
// a pod no node fits, find on each node the fewest lower-priority pods whose
// removal lets it fit, and pick the node where that hurts least. The
// scheduler deletes the victims through the API and nominates the node.
//
// As in Kubernetes, a node refused for labels, taints, readiness, volumes,
// required pod affinity or a missing topology label is not helped
// ("Preemption is not helpful for scheduling"); one refused for resources,
// host ports, pod slots, anti-affinity or spread skew is tried. Removing
// victims frees resources, ports and slots; the decision's pod affinity
// and spread counts are not recomputed without them, so a node refused
// for anti-affinity or skew stays refused (Kubernetes would also preempt
// the lower-priority pods that cause those).

// Reasons of the preemption's own "0/N nodes are available" message.
const (
	ReasonPreemptionNotHelpful = "Preemption is not helpful for scheduling"
	ReasonNoVictims            = "No preemption victims found for incoming pod"
)

// resolvable are the filters a refusal of which removing pods can undo,
// but for the reasons in unresolvable.
var (
	resolvable = map[string]bool{"NodeResourcesFit": true, "NodePorts": true, "MaxPods": true,
		"InterPodAffinity": true, "PodTopologySpread": true}
	unresolvable = map[string]bool{
		"node(s) didn't match pod affinity rules":                                       true,
		"node(s) didn't match pod topology spread constraints (missing required label)": true,
	}
)

// Victim is a pod that may be preempted.
type Victim struct {
	Info *PodInfo
	// ViolatesBudget: evicting it would take a PodDisruptionBudget below
	// what it allows.
	ViolatesBudget bool
	// StartTime orders pods of equal priority (older is more important);
	// Unix nanoseconds.
	StartTime int64
}

// Candidate is a node and the victims that make room there.
type Candidate struct {
	Node       *NodeInfo
	Victims    []Victim
	Violations int
}

// FindCandidates tries each node: on the ones a resolvable filter refused,
// it removes every pod of lower priority than pi (podsOn gives them), checks
// that pi then fits, and adds back as many as it can, most important first
// and those a budget protects before the others; what it cannot add back
// are the victims. It returns the candidates and, if there are none, why
// per node (the reasons of the "preemption: 0/N nodes are available" message).
func FindCandidates(pi *PodInfo, nodes []*NodeInfo, filters []FilterPlugin, podsOn func(node string) []Victim) ([]Candidate, map[string]int) {
	var out []Candidate
	reasons := map[string]int{}
	fitsOn := func(ni *NodeInfo) *Status {
		for _, f := range filters {
			if st := f.Filter(pi, ni); st != nil {
				return st
			}
		}
		return nil
	}
	var scratch NodeInfo
	for _, ni := range nodes {
		helps := false
		for _, f := range filters {
			if st := f.Filter(pi, ni); st != nil {
				helps = resolvable[f.Name()] && !unresolvable[st.String()]
				break
			}
		}
		if !helps {
			reasons[ReasonPreemptionNotHelpful]++
			continue
		}
		var potential []Victim
		for _, v := range podsOn(ni.Name()) {
			if v.Info.Priority < pi.Priority {
				potential = append(potential, v)
			}
		}
		if len(potential) == 0 {
			reasons[ReasonNoVictims]++
			continue
		}
		ni.CopyInto(&scratch)
		for _, v := range potential {
			scratch.RemovePod(v.Info)
		}
		if st := fitsOn(&scratch); st != nil {
			for _, r := range st.Reasons() {
				reasons[r]++
			}
			continue
		}
		// Most important first: higher priority, then older.
		sort.SliceStable(potential, func(i, j int) bool {
			if potential[i].Info.Priority != potential[j].Info.Priority {
				return potential[i].Info.Priority > potential[j].Info.Priority
			}
			return potential[i].StartTime < potential[j].StartTime
		})
		c := Candidate{Node: ni}
		reprieve := func(v Victim) {
			scratch.AddPod(v.Info)
			if fitsOn(&scratch) == nil {
				return
			}
			scratch.RemovePod(v.Info)
			c.Victims = append(c.Victims, v)
			if v.ViolatesBudget {
				c.Violations++
			}
		}
		for _, v := range potential {
			if v.ViolatesBudget {
				reprieve(v)
			}
		}
		for _, v := range potential {
			if !v.ViolatesBudget {
				reprieve(v)
			}
		}
		out = append(out, c)
	}
	if len(out) > 0 {
		return out, nil
	}
	return nil, reasons
}

// PickCandidate chooses as Kubernetes' pickOneNodeForPreemption does:
// the fewest budget violations, then the lowest highest-priority victim,
// then the smallest sum of victim priorities, then the fewest victims.
func PickCandidate(cs []Candidate) *Candidate {
	if len(cs) == 0 {
		return nil
	}
	type key struct {
		violations int
		highest    int64
		sum        int64
		n          int
	}
	keyOf := func(c *Candidate) key {
		k := key{violations: c.Violations, highest: math.MinInt64, n: len(c.Victims)}
		for _, v := range c.Victims {
			p := int64(v.Info.Priority)
			k.highest = max(k.highest, p)
			k.sum += p + math.MaxInt32 + 1 // every victim counts, even at negative priority
		}
		return k
	}
	best, bk := &cs[0], keyOf(&cs[0])
	for i := 1; i < len(cs); i++ {
		k := keyOf(&cs[i])
		switch {
		case k.violations != bk.violations:
			if k.violations > bk.violations {
				continue
			}
		case k.highest != bk.highest:
			if k.highest > bk.highest {
				continue
			}
		case k.sum != bk.sum:
			if k.sum > bk.sum {
				continue
			}
		case k.n < bk.n:
		default:
			continue
		}
		best, bk = &cs[i], k
	}
	return best
}
