package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/wait"
)

// TestSkeletonRetriesAndDrops: an error is retried with backoff until it
// succeeds; a permanent error is dropped after one try; a panic is an
// ordinary (retried) error; metrics count both kinds.
func TestSkeletonRetriesAndDrops(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var mu sync.Mutex
	calls := map[string]int{}
	done := make(chan struct{})
	c := New(Config{Name: "test", Workers: 2, Metrics: m, BaseDelay: time.Millisecond, Sync: func(_ context.Context, key string) error {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch key {
		case "flaky":
			if calls[key] < 3 {
				return errors.New("try again")
			}
			close(done)
		case "bad":
			return Permanent(errors.New("cannot ever work"))
		case "panics":
			if calls[key] == 1 {
				panic("boom")
			}
		}
		return nil
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Run(ctx) }()
	c.Enqueue("bad")
	c.Enqueue("panics")
	c.Enqueue("flaky")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("flaky key never succeeded")
	}
	wait.Eventually(t, 5*time.Second, "the panicking key retried", func() error {
		mu.Lock()
		defer mu.Unlock()
		if p := calls["panics"]; p < 2 {
			return fmt.Errorf("called %d times", p)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if calls["flaky"] != 3 || calls["bad"] != 1 {
		t.Fatalf("calls %v: want flaky 3 times, bad once", calls)
	}
	vals := gather(t, reg)
	if got := vals["tugboat_controller_manager_sync_errors_total/permanent"]; got != 1 {
		t.Errorf("permanent errors %v", got)
	}
	if got := vals["tugboat_controller_manager_sync_errors_total/retry"]; got != 3 {
		t.Errorf("retried errors %v, want 3 (2 flaky + 1 panic)", got)
	}
	if _, ok := vals["tugboat_controller_manager_queue_depth/test"]; !ok {
		t.Errorf("no queue depth for the controller: %v", vals)
	}
	// Registering again on the same registry reuses the metrics.
	if NewMetrics(reg).syncErrors != m.syncErrors {
		t.Error("second NewMetrics did not reuse the registered collectors")
	}
}

func TestExpectations(t *testing.T) {
	now := time.Unix(0, 0)
	e := NewExpectations(time.Minute)
	e.now = func() time.Time { return now }
	if !e.Satisfied("rs") {
		t.Fatal("nothing expected: satisfied")
	}
	e.ExpectCreations("rs", 2)
	e.CreationObserved("rs")
	if e.Satisfied("rs") {
		t.Fatal("one create outstanding")
	}
	e.CreationObserved("rs")
	if !e.Satisfied("rs") {
		t.Fatal("both creates seen")
	}
	e.ExpectDeletions("rs", []string{"u1", "u2"})
	e.DeletionObserved("rs", "u1")
	e.DeletionObserved("rs", "u1") // a graceful delete is seen twice
	if e.Satisfied("rs") {
		t.Fatal("u2 outstanding")
	}
	now = now.Add(2 * time.Minute)
	if !e.Satisfied("rs") {
		t.Fatal("expired expectations must not block forever")
	}
	e.Delete("rs")
	if !e.Satisfied("rs") {
		t.Fatal("deleted")
	}
}

// gather returns "name/last label value" -> value for counters and gauges.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			lbl := m.GetLabel()
			k := mf.GetName() + "/" + lbl[len(lbl)-1].GetValue()
			switch {
			case m.GetCounter() != nil:
				out[k] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[k] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
