package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tugboat/tugboat/hack/bench/internal/plot"
)

// writePlots draws the load phase into dir: latency.png (each pod's
// startup latency and each probe write's watch delivery lag, by when it
// was seen) and rss.png (every component's RSS over the load).
func (r *result) writePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	secs := func(ds []time.Duration) []float64 {
		out := make([]float64, len(ds))
		for i, d := range ds {
			out[i] = d.Seconds()
		}
		return out
	}
	lagSeen := make([]time.Duration, len(r.watch.at))
	for i := range r.watch.at {
		lagSeen[i] = r.watch.at[i] + r.watch.fromRequest[i]
	}
	prefix := fmt.Sprintf("density-%d-", r.nodes)
	latency := plot.Chart{
		Title:  fmt.Sprintf("%d hollow nodes, %d pods: latency over the load", r.nodes, r.pods),
		XLabel: "seconds since the first Deployment create", YLabel: "s",
		Series: []plot.Series{
			{Name: "pod startup (create->Running)", X: secs(r.startupAt), Y: secs(r.startup), Dots: true},
			{Name: "watch lag (probe, upper bound)", X: secs(lagSeen), Y: secs(r.watch.fromRequest)},
		},
	}
	rss := plot.Chart{Title: fmt.Sprintf("%d hollow nodes: RSS over the load", r.nodes), XLabel: "seconds since the first Deployment create", YLabel: "MiB"}
	for _, name := range r.order {
		s := plot.Series{Name: name}
		for _, x := range r.rss[name] {
			s.X = append(s.X, x.at.Sub(r.loadStart).Seconds())
			s.Y = append(s.Y, x.v/(1<<20))
		}
		rss.Series = append(rss.Series, s)
	}
	var paths []string
	for name, c := range map[string]plot.Chart{"latency.png": latency, "rss.png": rss} {
		p := filepath.Join(dir, prefix+name)
		if err := c.WritePNG(p); err != nil {
			return paths, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
