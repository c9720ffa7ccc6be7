// Package promtext reads a component's /metrics page (the Prometheus text
// exposition format) into flat samples, for the programs that watch
// Tugboat's own metrics: the console's charts and the benchmark drivers.
// The page is parsed by Prometheus' own parser (prometheus/common/expfmt);
// a histogram or summary comes out as the series its text has
// (name_bucket{le=...}, name_sum, name_count; name{quantile=...}), so a
// caller asks for what it sees on the page. Quantile estimates a
// histogram's quantile as PromQL's histogram_quantile does.
package promtext

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one series of the page: its name, labels and value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples are a page's series, in the page's order by family name.
type Samples []Sample

// Scrape reads url's page with c (http.DefaultClient if nil).
func Scrape(ctx context.Context, c *http.Client, url string) (Samples, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: url, Status: resp.Status}
	}
	return Parse(resp.Body)
}

// StatusError is a page answered with a status other than 200.
type StatusError struct{ URL, Status string }

func (e *StatusError) Error() string { return e.URL + ": " + e.Status }

// Parse reads a page in the text format.
func Parse(r io.Reader) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics page: %w", err)
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	var out Samples
	for _, n := range names {
		for _, m := range fams[n].GetMetric() {
			out = append(out, flatten(n, m)...)
		}
	}
	return out, nil
}

// flatten is metric m of family name as the series its text has.
func flatten(name string, m *dto.Metric) []Sample {
	labels := func(extra ...string) map[string]string {
		l := make(map[string]string, len(m.GetLabel())+len(extra)/2)
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	switch {
	case m.Counter != nil:
		return []Sample{{name, labels(), m.Counter.GetValue()}}
	case m.Gauge != nil:
		return []Sample{{name, labels(), m.Gauge.GetValue()}}
	case m.Untyped != nil:
		return []Sample{{name, labels(), m.Untyped.GetValue()}}
	case m.Histogram != nil:
		h := m.Histogram
		out := make([]Sample, 0, len(h.GetBucket())+3)
		for _, b := range h.GetBucket() {
			out = append(out, Sample{name + "_bucket", labels("le", formatLe(b.GetUpperBound())), float64(b.GetCumulativeCount())})
		}
		if n := len(h.GetBucket()); n == 0 || !math.IsInf(h.GetBucket()[n-1].GetUpperBound(), 1) {
			out = append(out, Sample{name + "_bucket", labels("le", "+Inf"), float64(h.GetSampleCount())})
		}
		return append(out, Sample{name + "_sum", labels(), h.GetSampleSum()}, Sample{name + "_count", labels(), float64(h.GetSampleCount())})
	case m.Summary != nil:
		s := m.Summary
		out := make([]Sample, 0, len(s.GetQuantile())+2)
		for _, q := range s.GetQuantile() {
			out = append(out, Sample{name, labels("quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64)), q.GetValue()})
		}
		return append(out, Sample{name + "_sum", labels(), s.GetSampleSum()}, Sample{name + "_count", labels(), float64(s.GetSampleCount())})
	}
	return nil
}

func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Sum is the sum of the series named name whose labels include every
// key=value pair of match (none: every series of the name), and whether
// there was one.
func (s Samples) Sum(name string, match ...string) (float64, bool) {
	sum, found := 0.0, false
	for _, x := range s {
		if x.Name == name && x.matches(match) {
			sum += x.Value
			found = true
		}
	}
	return sum, found
}

func (x Sample) matches(match []string) bool {
	for i := 0; i+1 < len(match); i += 2 {
		if x.Labels[match[i]] != match[i+1] {
			return false
		}
	}
	return true
}

// Quantile estimates quantile q of histogram name over its series whose
// labels include match's pairs (their buckets added up), interpolating
// linearly inside the bucket as PromQL's histogram_quantile does; NaN
// when there is no observation.
func (s Samples) Quantile(name string, q float64, match ...string) float64 {
	byLe := map[float64]float64{}
	for _, x := range s {
		if x.Name != name+"_bucket" || !x.matches(match) {
			continue
		}
		if le, ok := x.upperBound(); ok {
			byLe[le] += x.Value
		}
	}
	return quantile(byLe, q)
}

// upperBound is a bucket series' le label as a number (+Inf included).
func (x Sample) upperBound() (float64, bool) {
	v := x.Labels["le"]
	if v == "+Inf" {
		return math.Inf(1), true
	}
	le, err := strconv.ParseFloat(v, 64)
	return le, err == nil
}

// Group is the label values a histogram's series are grouped by (Groups).
type Group map[string]string

// Groups are the distinct values of the labels by that name's bucket
// series have, each with its quantile q and observation count: the
// histogram per (for instance) kind and verb.
func (s Samples) Groups(name string, q float64, by ...string) []GroupQuantile {
	type acc struct {
		labels Group
		byLe   map[float64]float64
	}
	groups := map[string]*acc{}
	var keys []string
	for _, x := range s {
		if x.Name != name+"_bucket" {
			continue
		}
		key := ""
		for _, b := range by {
			key += x.Labels[b] + "\x00"
		}
		g := groups[key]
		if g == nil {
			g = &acc{labels: Group{}, byLe: map[float64]float64{}}
			for _, b := range by {
				g.labels[b] = x.Labels[b]
			}
			groups[key] = g
			keys = append(keys, key)
		}
		if le, ok := x.upperBound(); ok {
			g.byLe[le] += x.Value
		}
	}
	sort.Strings(keys)
	out := make([]GroupQuantile, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		out = append(out, GroupQuantile{Labels: g.labels, Count: g.byLe[math.Inf(1)], Value: quantile(g.byLe, q)})
	}
	return out
}

// GroupQuantile is one group's quantile and observation count.
type GroupQuantile struct {
	Labels Group
	Count  float64
	Value  float64
}

// quantile is histogram_quantile over cumulative counts by upper bound.
func quantile(byLe map[float64]float64, q float64) float64 {
	if len(byLe) == 0 {
		return math.NaN()
	}
	les := make([]float64, 0, len(byLe))
	for le := range byLe {
		les = append(les, le)
	}
	sort.Float64s(les)
	total := byLe[les[len(les)-1]]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	prevLe, prevCount := 0.0, 0.0
	for _, le := range les {
		c := byLe[le]
		if c >= rank {
			switch {
			case math.IsInf(le, 1):
				return prevLe
			case c == prevCount:
				return le
			}
			return prevLe + (le-prevLe)*(rank-prevCount)/(c-prevCount)
		}
		prevLe, prevCount = le, c
	}
	return prevLe
}
