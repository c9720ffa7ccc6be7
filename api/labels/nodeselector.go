package labels

import (
	"fmt"
	"strconv"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// NodeSelectorTerm is one compiled term of a required node affinity.
type NodeSelectorTerm []NodeRequirement

// NodeRequirement is one matchExpressions entry: the label operators plus
// Gt and Lt, which compare a label's value as an integer.
type NodeRequirement struct {
	// Field is set for a matchFields requirement (Key metadata.name).
	Field  bool
	Key    string
	Op     string // In, NotIn, Exists, DoesNotExist, Gt, Lt
	Values []string
	num    int64 // the bound for Gt and Lt
}

// Matches reports whether node labels satisfy the requirement.
func (r NodeRequirement) Matches(lbls map[string]string) bool {
	v, ok := lbls[r.Key]
	switch r.Op {
	case "In":
		return ok && contains(r.Values, v)
	case "NotIn":
		return !ok || !contains(r.Values, v)
	case "Exists":
		return ok
	case "DoesNotExist":
		return !ok
	case "Gt", "Lt":
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.Op == "Gt" {
			return n > r.num
		}
		return n < r.num
	}
	return false
}

// Matches reports whether a node with these labels and this name meets
// every requirement of the term. An empty term matches no node (as in
// Kubernetes).
func (t NodeSelectorTerm) Matches(lbls map[string]string, nodeName string) bool {
	if len(t) == 0 {
		return false
	}
	for _, r := range t {
		if r.Field {
			if !r.Matches(map[string]string{"metadata.name": nodeName}) {
				return false
			}
		} else if !r.Matches(lbls) {
			return false
		}
	}
	return true
}

// NodeSelectorMatches reports whether any term matches the node.
func NodeSelectorMatches(terms []NodeSelectorTerm, lbls map[string]string, nodeName string) bool {
	for _, term := range terms {
		if term.Matches(lbls, nodeName) {
			return true
		}
	}
	return false
}

// CompileNodeSelector compiles a required node affinity; errors name the
// offending field under path.
func CompileNodeSelector(ns *v1.NodeSelector, path string) ([]NodeSelectorTerm, error) {
	terms := make([]NodeSelectorTerm, 0, len(ns.NodeSelectorTerms))
	for i, t := range ns.NodeSelectorTerms {
		term := make(NodeSelectorTerm, 0, len(t.MatchExpressions)+len(t.MatchFields))
		for j, f := range t.MatchFields {
			fp := fmt.Sprintf("%s.nodeSelectorTerms[%d].matchFields[%d]", path, i, j)
			if f.Key != "metadata.name" {
				return nil, fmt.Errorf("%s.key: %q is not supported (only metadata.name)", fp, f.Key)
			}
			if (f.Operator != "In" && f.Operator != "NotIn") || len(f.Values) != 1 {
				return nil, fmt.Errorf("%s: metadata.name needs operator In or NotIn and exactly one value", fp)
			}
			term = append(term, NodeRequirement{Field: true, Key: f.Key, Op: f.Operator, Values: f.Values})
		}
		for j, e := range t.MatchExpressions {
			r := NodeRequirement{Key: e.Key, Op: e.Operator, Values: e.Values}
			path := fmt.Sprintf("%s.nodeSelectorTerms[%d].matchExpressions[%d]", path, i, j)
			switch e.Operator {
			case "In", "NotIn":
				if len(e.Values) == 0 {
					return nil, fmt.Errorf("%s.values: must be non-empty for %s", path, e.Operator)
				}
			case "Exists", "DoesNotExist":
			case "Gt", "Lt":
				if len(e.Values) != 1 {
					return nil, fmt.Errorf("%s.values: %s needs exactly one integer value", path, e.Operator)
				}
				n, err := strconv.ParseInt(e.Values[0], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("%s.values[0]: %q is not an integer", path, e.Values[0])
				}
				r.num = n
			default:
				return nil, fmt.Errorf("%s.operator: %q is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt", path, e.Operator)
			}
			term = append(term, r)
		}
		terms = append(terms, term)
	}
	return terms, nil
}
