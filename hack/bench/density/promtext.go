package main

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// series is one sample of a Prometheus text exposition: its name, labels
// and value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

type samples []series

func scrape(ctx context.Context, addr string) (samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	var out samples
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		s := series{name: line[:i], labels: map[string]string{}, value: v}
		if j := strings.IndexByte(s.name, '{'); j >= 0 {
			for _, kv := range strings.Split(strings.TrimSuffix(s.name[j+1:], "}"), ",") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					s.labels[k] = strings.Trim(v, `"`)
				}
			}
			s.name = s.name[:j]
		}
		out = append(out, s)
	}
	return out, sc.Err()
}

// latencies estimates quantile q of histogram name for each kind and verb
// but Watch (whose duration is the stream's), interpolating inside the
// bucket as PromQL's histogram_quantile does.
func (s samples) latencies(name string, q float64) []apiLatency {
	type bucket struct{ le, count float64 }
	type key struct{ kind, verb string }
	buckets := map[key][]bucket{}
	for _, x := range s {
		if x.name != name+"_bucket" || x.labels["verb"] == "Watch" {
			continue
		}
		b := bucket{count: x.value, le: math.Inf(1)}
		if le := x.labels["le"]; le != "+Inf" {
			b.le, _ = strconv.ParseFloat(le, 64)
		}
		k := key{x.labels["kind"], x.labels["verb"]}
		buckets[k] = append(buckets[k], b)
	}
	var out []apiLatency
	for k, bs := range buckets {
		sort.Slice(bs, func(i, j int) bool { return bs[i].le < bs[j].le })
		total := bs[len(bs)-1].count
		if total == 0 {
			continue
		}
		rank := q * total
		prevLe, prevCount, v := 0.0, 0.0, 0.0
	scan:
		for _, b := range bs {
			if b.count >= rank {
				switch {
				case math.IsInf(b.le, 1):
					v = prevLe
				case b.count == prevCount:
					v = b.le
				default:
					v = prevLe + (b.le-prevLe)*(rank-prevCount)/(b.count-prevCount)
				}
				break scan
			}
			prevLe, prevCount = b.le, b.count
		}
		out = append(out, apiLatency{kind: k.kind, verb: k.verb, count: total, p99: v})
	}
	sortLatencies(out)
	return out
}
