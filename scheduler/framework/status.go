package framework

import (
	"fmt"
	"sort"
	"strings"
)

// Status is a filter's refusal: one or more reasons in the words users see
// in "0/N nodes are available: ...". A nil *Status means the node fits.
type Status struct {
	reasons []string
}

// NewStatus makes a refusal. Build statuses once (in a plugin's
// constructor, or per node) and return the same pointer every time.
func NewStatus(reasons ...string) *Status { return &Status{reasons: reasons} }

// Reasons are the refusal's reasons.
func (s *Status) Reasons() []string { return s.reasons }

func (s *Status) String() string { return strings.Join(s.reasons, "; ") }

// FitError says why no node fits a pod.
type FitError struct {
	NumNodes int
	// Reasons counts, per reason, the nodes that refused for it.
	Reasons map[string]int
	// Events are the cluster changes that could make one of the refusing
	// filters pass: the queue retries the pod only on those.
	Events ClusterEvent
}

// Error is the message users know from kube-scheduler:
// "0/5 nodes are available: 3 Insufficient cpu, 1 node(s) had untolerated
// taint {dedicated: gpu}." Reasons are ordered by count, most first, then
// by name.
func (e *FitError) Error() string {
	return FitMessage(e.NumNodes, e.Reasons)
}

// FitMessage formats the message of a FitError.
func FitMessage(numNodes int, reasons map[string]int) string {
	type rc struct {
		reason string
		count  int
	}
	list := make([]rc, 0, len(reasons))
	for r, c := range reasons {
		list = append(list, rc{r, c})
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		return list[i].reason < list[j].reason
	})
	var b strings.Builder
	fmt.Fprintf(&b, "0/%d nodes are available", numNodes)
	for i, x := range list {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", x.count, x.reason)
	}
	b.WriteString(".")
	return b.String()
}
