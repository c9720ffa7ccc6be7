package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tugboat/tugboat/internal/promtext"
)

// goStats reads the Go heap in use (bytes), the goroutine stacks in use
// (bytes) and the goroutines of the process whose metrics are at addr
// (zeros if they cannot be read).
func goStats(ctx context.Context, addr string) (heap, stacks, goroutines float64) {
	m, err := promtext.Scrape(ctx, nil, "http://"+addr+"/metrics")
	if err != nil {
		return 0, 0, 0
	}
	heap, _ = m.Sum("go_memstats_heap_inuse_bytes")
	stacks, _ = m.Sum("go_memstats_stack_inuse_bytes")
	goroutines, _ = m.Sum("go_goroutines")
	return heap, stacks, goroutines
}

// saveURL writes what url answers to path (a profile).
func saveURL(ctx context.Context, path, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// eventDrops is one component's event recorder over the run, from its
// metrics: events recorded (tugboat_events_recorded_total, every Eventf,
// repeats included) and dropped because its queues were full
// (tugboat_events_dropped_total).
type eventDrops struct {
	component         string
	recorded, dropped float64
	err               error
}

func readEventDrops(ctx context.Context, component, addr string) eventDrops {
	e := eventDrops{component: component}
	m, err := promtext.Scrape(ctx, nil, "http://"+addr+"/metrics")
	if err != nil {
		e.err = err
		return e
	}
	e.recorded, _ = m.Sum("tugboat_events_recorded_total")
	e.dropped, _ = m.Sum("tugboat_events_dropped_total")
	return e
}
