package job

import (
	"sort"
	"strconv"
	"strings"
)

// parseIndexes reads completedIndexes ("1,3-5") as a set; malformed parts
// are skipped (the controller writes this field, users do not).
func parseIndexes(s string) map[int]bool {
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out[i] = true
		}
	}
	return out
}

// formatIndexes writes a set of indexes as Kubernetes does: sorted, runs
// of consecutive indexes as ranges ("1,3-5").
func formatIndexes(set map[int]bool) string {
	list := make([]int, 0, len(set))
	for i := range set {
		list = append(list, i)
	}
	sort.Ints(list)
	var b strings.Builder
	for i := 0; i < len(list); {
		j := i
		for j+1 < len(list) && list[j+1] == list[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(list[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(list[j]))
		}
		i = j + 1
	}
	return b.String()
}
