// Package labels parses and matches Kubernetes label selectors:
// "app=web,tier!=db,env in (a,b),region notin (x),gpu,!legacy".
// An empty selector matches everything.
package labels

import (
	"fmt"
	"sort"
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Operator is a requirement's comparison.
type Operator string

const (
	Equals       Operator = "="
	NotEquals    Operator = "!="
	In           Operator = "in"
	NotIn        Operator = "notin"
	Exists       Operator = "exists"
	DoesNotExist Operator = "!"
)

// Requirement is one comma-separated term of a selector.
type Requirement struct {
	Key    string
	Op     Operator
	Values []string
}

// Matches reports whether labels satisfy the requirement.
func (r Requirement) Matches(labels map[string]string) bool {
	v, ok := labels[r.Key]
	switch r.Op {
	case Equals:
		return ok && v == r.Values[0]
	case NotEquals:
		return !ok || v != r.Values[0]
	case In:
		return ok && contains(r.Values, v)
	case NotIn:
		return !ok || !contains(r.Values, v)
	case Exists:
		return ok
	case DoesNotExist:
		return !ok
	}
	return false
}

func (r Requirement) String() string {
	switch r.Op {
	case Equals, NotEquals:
		return r.Key + string(r.Op) + r.Values[0]
	case In, NotIn:
		return r.Key + " " + string(r.Op) + " (" + strings.Join(r.Values, ",") + ")"
	case Exists:
		return r.Key
	case DoesNotExist:
		return "!" + r.Key
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Selector is a conjunction of requirements.
type Selector []Requirement

// Everything matches every label set.
func Everything() Selector { return nil }

// Empty reports whether the selector has no requirement.
func (s Selector) Empty() bool { return len(s) == 0 }

// Matches reports whether labels satisfy every requirement.
func (s Selector) Matches(labels map[string]string) bool {
	for _, r := range s {
		if !r.Matches(labels) {
			return false
		}
	}
	return true
}

func (s Selector) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// SelectorFromSet is the equality selector for a map (a Service's selector,
// a nodeSelector). Keys are sorted so String is stable.
func SelectorFromSet(set map[string]string) Selector {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := make(Selector, 0, len(keys))
	for _, k := range keys {
		s = append(s, Requirement{Key: k, Op: Equals, Values: []string{set[k]}})
	}
	return s
}

// FromLabelSelector converts an apps/v1 LabelSelector. A nil selector matches
// nothing (as in Kubernetes); an empty one matches everything.
func FromLabelSelector(ls *v1.LabelSelector) (Selector, error) {
	if ls == nil {
		return Selector{{Key: "", Op: In}}, nil // In with no values never matches
	}
	s := SelectorFromSet(ls.MatchLabels)
	for i, e := range ls.MatchExpressions {
		r, err := requirementFromExpression(e)
		if err != nil {
			return nil, fmt.Errorf("matchExpressions[%d]: %w", i, err)
		}
		s = append(s, r)
	}
	return s, nil
}

func requirementFromExpression(e *v1.LabelSelectorRequirement) (Requirement, error) {
	if e.Key == "" {
		return Requirement{}, fmt.Errorf("key: required")
	}
	switch e.Operator {
	case "In", "NotIn":
		if len(e.Values) == 0 {
			return Requirement{}, fmt.Errorf("values: must be non-empty for operator %s", e.Operator)
		}
		op := In
		if e.Operator == "NotIn" {
			op = NotIn
		}
		return Requirement{Key: e.Key, Op: op, Values: append([]string(nil), e.Values...)}, nil
	case "Exists", "DoesNotExist":
		if len(e.Values) != 0 {
			return Requirement{}, fmt.Errorf("values: must be empty for operator %s", e.Operator)
		}
		op := Exists
		if e.Operator == "DoesNotExist" {
			op = DoesNotExist
		}
		return Requirement{Key: e.Key, Op: op}, nil
	}
	return Requirement{}, fmt.Errorf("operator: %q is not one of In, NotIn, Exists, DoesNotExist", e.Operator)
}

// RequirementFromExpression converts one matchExpressions entry (also used by
// node affinity terms).
func RequirementFromExpression(e *v1.LabelSelectorRequirement) (Requirement, error) {
	return requirementFromExpression(e)
}
