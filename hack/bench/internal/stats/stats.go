// Package stats is the benchmarks' arithmetic on latency samples.
package stats

import (
	"sort"
	"time"
)

// Percentile is the p-th percentile (nearest rank) of d, rounded to 10µs;
// 0 for no samples. d is not changed.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(10 * time.Microsecond)
}
