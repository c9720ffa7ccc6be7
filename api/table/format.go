package table

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The cell helpers: how the columns write times, labels, selectors and
// conditions. They are exported for the describe and trace texts, which
// write the same values the same way.

// Age is the kubectl-style age of a timestamp: "<unknown>" when unset.
func Age(ts *timestamppb.Timestamp, now time.Time) string {
	if ts == nil {
		return "<unknown>"
	}
	return HumanDuration(now.Sub(ts.AsTime()))
}

// HumanDuration prints a duration the way kubectl's AGE column does:
// 45s, 5m30s, 42m, 3h20m, 20h, 3d4h, 45d, 2y30d.
func HumanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if s := int(d.Round(time.Second) / time.Second); s < 120 {
		return fmt.Sprintf("%ds", s)
	}
	m := int(d / time.Minute)
	h := int(d / time.Hour)
	switch {
	case m < 10:
		if s := int(d/time.Second) % 60; s != 0 {
			return fmt.Sprintf("%dm%ds", m, s)
		}
		return fmt.Sprintf("%dm", m)
	case h < 3:
		return fmt.Sprintf("%dm", m)
	case h < 8:
		if m%60 != 0 {
			return fmt.Sprintf("%dh%dm", h, m%60)
		}
		return fmt.Sprintf("%dh", h)
	case h < 48:
		return fmt.Sprintf("%dh", h)
	case h < 24*8:
		if h%24 != 0 {
			return fmt.Sprintf("%dd%dh", h/24, h%24)
		}
		return fmt.Sprintf("%dd", h/24)
	case h < 24*365*2:
		return fmt.Sprintf("%dd", h/24)
	case h < 24*365*8:
		if d := (h / 24) % 365; d != 0 {
			return fmt.Sprintf("%dy%dd", h/24/365, d)
		}
		return fmt.Sprintf("%dy", h/24/365)
	}
	return fmt.Sprintf("%dy", h/24/365)
}

// LabelString is "a=b,c=d" sorted, or "<none>".
func LabelString(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ",")
}

// SelectorString is a label selector as a selector string, "<none>" for
// none and "<invalid>" for one that does not parse.
func SelectorString(sel *v1.LabelSelector) string {
	if sel == nil {
		return "<none>"
	}
	s, err := labels.FromLabelSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return OrNone(s.String())
}

// OrNone is s, or "<none>" when it is empty.
func OrNone(s string) string { return cmp.Or(s, "<none>") }

// Condition is the condition of type typ in conds, or nil.
func Condition(conds []*v1.Condition, typ string) *v1.Condition {
	for _, c := range conds {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// ConditionStatus is the status of the condition of type typ ("True",
// "False", "Unknown"), or "" when conds has none.
func ConditionStatus(conds []*v1.Condition, typ string) string {
	if c := Condition(conds, typ); c != nil {
		return c.Status
	}
	return ""
}
