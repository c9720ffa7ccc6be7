package manifest

import (
	"fmt"
	"strings"
)

// Error is one problem in a manifest. Its message reads
//
//	web.yaml: document 2 (Deployment web): spec.template.spec.containers[0].imagePullPolicyy: unknown field (did you mean "imagePullPolicy"?)
//
// Kind, Name and Path are empty when they are not known (a YAML syntax
// error has none of them).
type Error struct {
	Source Source
	Kind   string
	Name   string
	Path   string
	Msg    string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Source.String())
	switch {
	case e.Kind != "" && e.Name != "":
		fmt.Fprintf(&b, " (%s %s)", e.Kind, e.Name)
	case e.Kind != "":
		fmt.Fprintf(&b, " (%s)", e.Kind)
	case e.Name != "":
		fmt.Fprintf(&b, " (%s)", e.Name)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// at returns a copy of e about path.
func (e *Error) at(path, msg string) *Error {
	c := *e
	c.Path, c.Msg = path, msg
	return &c
}

// suggest returns the candidate closest to name (case-insensitively equal, or
// within two edits), or "".
func suggest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return c
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(c), bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or limit if it is at
// least limit.
func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin >= limit {
			return limit
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

// describe names the JSON type of a value for messages.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", truncate(v))
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	default:
		return fmt.Sprintf("the number %v", v)
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
