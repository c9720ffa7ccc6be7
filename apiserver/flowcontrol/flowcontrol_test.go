package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/wait"
)

// Kubernetes' default seats at 600 (400 + 200 in flight).
func TestSeats(t *testing.T) {
	want := map[string]int{LeaderElection: 25, NodeHigh: 98, System: 74, WorkloadHigh: 98, WorkloadLow: 245, GlobalDefault: 49, CatchAll: 13}
	got := Seats(DefaultTotalSeats)
	for l, n := range want {
		if got[l] != n {
			t.Errorf("%s: %d seats, want %d", l, got[l], n)
		}
	}
	if s := Seats(1); s[LeaderElection] != 1 || s[CatchAll] != 1 {
		t.Errorf("Seats(1) = %v: every level needs a seat", s)
	}
}

// A level whose seats are all taken holds its next request in its queue,
// and refuses it when the queue wait passes; the other levels are not
// held; a released seat goes to the request waiting longest.
func TestLevelsAreIsolated(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(1, 200*time.Millisecond, reg) // one seat per level
	ctx := context.Background()
	release, err := l.Acquire(ctx, GlobalDefault)
	if err != nil {
		t.Fatal(err)
	}
	// The full level refuses after its queue wait, with Kubernetes' text.
	if _, err := l.Acquire(ctx, GlobalDefault); !errors.Is(err, apierrors.ErrLimitExceeded) || !strings.Contains(err.Error(), "Too many requests, please try again later.") {
		t.Fatalf("second request of a full level: %v, want ErrLimitExceeded", err)
	}
	if n := testutil.ToFloat64(l.rejected.WithLabelValues(GlobalDefault, "time-out")); n != 1 {
		t.Fatalf("rejected time-out = %v, want 1", n)
	}
	// Another level (and exempt) is not held by it.
	le, err := l.Acquire(ctx, LeaderElection)
	if err != nil {
		t.Fatalf("leader-election held by a full global-default: %v", err)
	}
	le()
	ex, err := l.Acquire(ctx, Exempt)
	if err != nil {
		t.Fatal(err)
	}
	ex()
	// Two wait; the seat goes to the first.
	l.queueWait = time.Minute
	order := make(chan int, 2)
	for i := range 2 {
		go func() {
			r, err := l.Acquire(ctx, GlobalDefault)
			if err != nil {
				order <- -1
				return
			}
			order <- i
			r()
		}()
		wait.Eventually(t, 10*time.Second, fmt.Sprintf("%d waiting for a seat", i+1), func() error {
			if n := testutil.ToFloat64(l.waiting.WithLabelValues(GlobalDefault)); n != float64(i+1) {
				return fmt.Errorf("%v waiting", n)
			}
			return nil
		})
	}
	release()
	if a, b := <-order, <-order; a != 0 || b != 1 {
		t.Fatalf("seats went to %d then %d, want 0 then 1", a, b)
	}
	// A caller that gives up leaves the queue.
	hold, _ := l.Acquire(ctx, GlobalDefault)
	defer hold()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Acquire(cctx, GlobalDefault); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if n := testutil.ToFloat64(l.waiting.WithLabelValues(GlobalDefault)); n != 0 {
		t.Fatalf("%v still queued", n)
	}
}
