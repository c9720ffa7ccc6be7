package console

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/tugboat/tugboat/internal/promtext"
)

// metricsInterval is how often the charts get a sample.
const metricsInterval = 2 * time.Second

// metricsHistory is how many samples a chart keeps (2 minutes).
const metricsHistory = 60

// Series the charts draw. The feed's own (pods bound per second, watch
// events per second, the median pod startup latency) need nothing but
// the watches; the components' come from their /metrics where the user
// gave their URLs (--metrics apiserver=http://127.0.0.1:10251/metrics)
// and they answer.
const (
	seriesPodsBound     = "pods bound /s"
	seriesWatchEvents   = "watch events /s"
	seriesStartup       = "pod startup latency s (median)"
	seriesAPILatency    = "API request latency s (mean)"
	seriesAPIWatches    = "API watches open"
	seriesSchedAttempts = "scheduling attempts /s"
	seriesSchedBinds    = "scheduler binds /s"
)

// promSeries picks from a component's /metrics what a chart needs.
var promSeries = []struct {
	component, series string
	// sum is the metric summed over its labels; count, if set, divides
	// the increase of sum by its increase (a histogram's mean).
	sum, count string
	rate       bool
}{
	{"apiserver", seriesAPILatency, "tugboat_apiserver_request_duration_seconds_sum", "tugboat_apiserver_request_duration_seconds_count", false},
	{"apiserver", seriesAPIWatches, "tugboat_apiserver_watchers", "", false},
	{"scheduler", seriesSchedAttempts, "tugboat_scheduler_schedule_attempts_total", "", true},
	{"scheduler", seriesSchedBinds, "tugboat_scheduler_binds_total", "", true},
}

// sample is one chart point.
type sample struct {
	T time.Time `json:"t"`
	V float64   `json:"v"`
}

// metrics samples the series every metricsInterval.
type metrics struct {
	urls map[string]string
	feed *feed
	log  *slog.Logger
	http *http.Client

	mu     sync.Mutex
	series map[string][]sample
	errors map[string]string // component -> why its /metrics is not read
}

func newMetrics(urls map[string]string, f *feed, log *slog.Logger) *metrics {
	return &metrics{urls: urls, feed: f, log: log, http: &http.Client{Timeout: 2 * time.Second},
		series: map[string][]sample{}, errors: map[string]string{}}
}

func (m *metrics) run(ctx context.Context) {
	t := time.NewTicker(metricsInterval)
	defer t.Stop()
	lastBound, lastEvents := m.feed.podsBound.Load(), m.feed.watchEvents.Load()
	prev := map[string]float64{}
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			secs := now.Sub(last).Seconds()
			last = now
			b, e := m.feed.podsBound.Load(), m.feed.watchEvents.Load()
			m.add(seriesPodsBound, now, float64(b-lastBound)/secs)
			m.add(seriesWatchEvents, now, float64(e-lastEvents)/secs)
			lastBound, lastEvents = b, e
			m.add(seriesStartup, now, m.feed.startups.median())
			for comp, url := range m.urls {
				vals, err := promtext.Scrape(ctx, m.http, url)
				m.mu.Lock()
				if err != nil {
					m.errors[comp] = err.Error()
				} else {
					delete(m.errors, comp)
				}
				m.mu.Unlock()
				if err != nil {
					continue
				}
				for _, p := range promSeries {
					if p.component != comp {
						continue
					}
					sum, ok := vals.Sum(p.sum)
					if !ok {
						continue
					}
					switch {
					case p.count != "":
						count, _ := vals.Sum(p.count)
						ds, dc := sum-prev[p.sum], count-prev[p.count]
						if _, seen := prev[p.sum]; seen && dc > 0 {
							m.add(p.series, now, ds/dc)
						}
						prev[p.count] = count
					case p.rate:
						if old, seen := prev[p.sum]; seen {
							m.add(p.series, now, (sum-old)/secs)
						}
					default:
						m.add(p.series, now, sum)
					}
					prev[p.sum] = sum
				}
			}
		}
	}
}

func (m *metrics) add(series string, t time.Time, v float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := append(m.series[series], sample{T: t, V: v})
	if len(s) > metricsHistory {
		s = s[len(s)-metricsHistory:]
	}
	m.series[series] = s
}

// chart is one series for the page.
type chart struct {
	Name    string   `json:"name"`
	Samples []sample `json:"samples"`
}

// serve is GET /api/metrics: every series, and why a component's
// /metrics is not read.
func (m *metrics) serve(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	out := struct {
		Charts []chart           `json:"charts"`
		Errors map[string]string `json:"errors,omitempty"`
		URLs   map[string]string `json:"urls,omitempty"`
	}{Errors: map[string]string{}, URLs: m.urls}
	for name, s := range m.series {
		out.Charts = append(out.Charts, chart{Name: name, Samples: append([]sample(nil), s...)})
	}
	for k, v := range m.errors {
		out.Errors[k] = v
	}
	m.mu.Unlock()
	sort.Slice(out.Charts, func(i, j int) bool { return out.Charts[i].Name < out.Charts[j].Name })
	writeJSON(w, out)
}
