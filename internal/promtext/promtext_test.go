package promtext

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TestScrape reads a page that client_golang serves: counters by label,
// a gauge, a histogram by kind and verb.
func TestScrape(t *testing.T) {
	reg := prometheus.NewRegistry()
	binds := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "binds_total"}, []string{"result"})
	pending := prometheus.NewGauge(prometheus.GaugeOpts{Name: "pending"})
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "request_duration_seconds", Buckets: []float64{0.1, 0.2, 0.4}}, []string{"kind", "verb"})
	reg.MustRegister(binds, pending, lat)
	binds.WithLabelValues("ok").Add(7)
	binds.WithLabelValues("conflict").Add(2)
	pending.Set(3)
	for i := 0; i < 100; i++ { // Pod Create: 50 under 0.1, 50 in (0.1, 0.2]
		v := 0.05
		if i >= 50 {
			v = 0.15
		}
		lat.WithLabelValues("Pod", "Create").Observe(v)
	}
	lat.WithLabelValues("Node", "Get").Observe(0.3)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	s, err := Scrape(context.Background(), nil, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s.Sum("binds_total", "result", "ok"); !ok || v != 7 {
		t.Errorf("binds_total{result=ok} = %v %v, want 7", v, ok)
	}
	if v, _ := s.Sum("binds_total"); v != 9 {
		t.Errorf("binds_total summed = %v, want 9", v)
	}
	if v, _ := s.Sum("pending"); v != 3 {
		t.Errorf("pending = %v", v)
	}
	if _, ok := s.Sum("missing"); ok {
		t.Error("a missing series was found")
	}
	if v, _ := s.Sum("request_duration_seconds_count"); v != 101 {
		t.Errorf("request_duration_seconds_count = %v, want 101", v)
	}
	if v, _ := s.Sum("request_duration_seconds_bucket", "kind", "Pod", "le", "+Inf"); v != 100 {
		t.Errorf("Pod's +Inf bucket = %v, want 100", v)
	}
	// rank 50 of 100 lies at the top of the first bucket; rank 75 half way
	// through the second: 0.1 + 0.1*25/50.
	if q := s.Quantile("request_duration_seconds", 0.5, "kind", "Pod"); math.Abs(q-0.1) > 1e-9 {
		t.Errorf("Pod p50 = %v, want 0.1", q)
	}
	if q := s.Quantile("request_duration_seconds", 0.75, "kind", "Pod"); math.Abs(q-0.15) > 1e-9 {
		t.Errorf("Pod p75 = %v, want 0.15", q)
	}
	if q := s.Quantile("request_duration_seconds", 0.5, "kind", "Nothing"); !math.IsNaN(q) {
		t.Errorf("a histogram with no observation: %v, want NaN", q)
	}
	g := s.Groups("request_duration_seconds", 0.99, "kind", "verb")
	if len(g) != 2 || g[0].Labels["kind"] != "Node" || g[0].Count != 1 || g[1].Labels["verb"] != "Create" || g[1].Count != 100 {
		t.Fatalf("groups %+v", g)
	}
	if math.Abs(g[0].Value-(0.2+0.2*0.99)) > 1e-9 {
		t.Errorf("Node Get p99 = %v", g[0].Value)
	}
}

func TestScrapeErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		_, _ = w.Write([]byte("# TYPE x counter\nx{a=\"1\" 3\n"))
	}))
	defer srv.Close()
	var se *StatusError
	if _, err := Scrape(context.Background(), nil, srv.URL+"/gone"); !errors.As(err, &se) || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404 page: %v", err)
	}
	if _, err := Scrape(context.Background(), nil, srv.URL); err == nil || !strings.Contains(err.Error(), "reading the metrics page") {
		t.Errorf("a malformed page: %v", err)
	}
}
