package record_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

func pod(name string) *v1.Pod {
	return &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default", Uid: "uid-" + name}}
}

func events(t testing.TB, c *client.Client) []*v1.Event {
	t.Helper()
	evs, _, err := client.For[*v1.Event](c).List(context.Background(), client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// A burst like the scheduler's (one Scheduled event per pod, thousands
// at once, recorded faster than one writer can store them) is stored
// whole: one Event per pod, none dropped; a storm of one repeated event
// is one Event whose count is the number of repeats.
func TestRecorderKeepsUpWithBursts(t *testing.T) {
	s := apiservertest.Start(t)
	reg := prometheus.NewRegistry()
	r := record.New(s.Client, "default-scheduler", "test", reg, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	const pods, repeats = 3000, 500
	for i := range pods {
		r.Eventf(pod(fmt.Sprintf("p%d", i)), record.Normal, "Scheduled", "Successfully assigned default/p%d to node%d", i, i%50)
	}
	crash := pod("crash")
	for range repeats {
		r.Eventf(crash, record.Warning, "BackOff", "Back-off restarting failed container c in pod crash_default")
	}
	wait.Eventually(t, 5*time.Minute, "every event stored", func() error {
		if n := r.Pending(); n > 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	if d := testutil.ToFloat64(r.Dropped()); d != 0 {
		t.Fatalf("dropped %v events", d)
	}
	var scheduled, backoff int
	var backoffCount int32
	perPod := map[string]int{}
	for _, ev := range events(t, s.Client) {
		switch ev.Reason {
		case "Scheduled":
			scheduled++
			perPod[ev.InvolvedObject.Name]++
		case "BackOff":
			backoff++
			backoffCount += ev.Count
		}
	}
	if scheduled != pods || len(perPod) != pods {
		t.Errorf("%d Scheduled events for %d pods, want one for each of %d", scheduled, len(perPod), pods)
	}
	// The last repeats may still be in flight as an update.
	wait.Eventually(t, time.Minute, "repeats counted", func() error {
		backoff, backoffCount = 0, 0
		for _, ev := range events(t, s.Client) {
			if ev.Reason == "BackOff" {
				backoff++
				backoffCount += ev.Count
			}
		}
		if backoff != 1 || backoffCount != repeats {
			return fmt.Errorf("%d BackOff events with count %d, want 1 with %d", backoff, backoffCount, repeats)
		}
		return nil
	})
}

// With nothing writing, the queues take MaxPending events and drop the
// rest, counted; the caller is never blocked.
func TestRecorderDropsBeyondMaxPending(t *testing.T) {
	s := apiservertest.Start(t)
	r := record.New(s.Client, "test", "test", nil, nil)
	const total = record.MaxPending + 500
	for i := range total {
		r.Eventf(pod(fmt.Sprintf("p%d", i)), record.Normal, "Created", "created")
	}
	pending, dropped := r.Pending(), int(testutil.ToFloat64(r.Dropped()))
	if pending > record.MaxPending || pending+dropped != total || dropped < 500 {
		t.Errorf("pending %d + dropped %d, want %d in all with at most %d pending", pending, dropped, total, record.MaxPending)
	}
}

// With one writer (WithWriters(1)) its one queue holds all of MaxPending:
// exactly the events beyond it are dropped; with two writers each queue
// holds half, and the writes of both are stored once Run starts.
func TestRecorderWriters(t *testing.T) {
	s := apiservertest.Start(t)
	one := record.New(s.Client, "test", "test", nil, nil, record.WithWriters(1))
	for i := range record.MaxPending + 10 {
		one.Eventf(pod(fmt.Sprintf("p%d", i)), record.Normal, "Created", "created")
	}
	if pending, dropped := one.Pending(), testutil.ToFloat64(one.Dropped()); pending != record.MaxPending || dropped != 10 {
		t.Errorf("one writer: pending %d, dropped %v; want %d and 10", pending, dropped, record.MaxPending)
	}

	two := record.New(s.Client, "test", "test", nil, nil, record.WithWriters(2))
	for i := range 200 {
		two.Eventf(pod(fmt.Sprintf("q%d", i)), record.Normal, "Scheduled", "scheduled")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { two.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	wait.Eventually(t, time.Minute, "the two writers' events stored", func() error {
		if n := two.Pending(); n > 0 {
			return fmt.Errorf("%d pending", n)
		}
		return nil
	})
	n := 0
	for _, ev := range events(t, s.Client) {
		if ev.Reason == "Scheduled" {
			n++
		}
	}
	if n != 200 {
		t.Errorf("%d Scheduled events stored, want 200", n)
	}
}

// BenchmarkRecorderBurst: b.N distinct events recorded at once, until all
// are stored (events/s is b.N over the time).
func BenchmarkRecorderBurst(b *testing.B) {
	s := apiservertest.Start(b)
	r := record.New(s.Client, "bench", "bench", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	b.ResetTimer()
	for i := range b.N {
		r.Eventf(pod(fmt.Sprintf("p%d", i)), record.Normal, "Scheduled", "Successfully assigned default/p%d to node1", i)
	}
	for r.Pending() > 0 {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(testutil.ToFloat64(r.Dropped()), "dropped")
}
