package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

var errSaw = errors.New("saw 2 of 3")

func TestUntilReturnsOnceCondHolds(t *testing.T) {
	n := 0
	err := Until(context.Background(), 5*time.Second, func(context.Context) error {
		n++
		if n < 3 {
			return fmt.Errorf("try %d: %w", n, errSaw)
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("Until = %v after %d calls, want nil after 3", err, n)
	}
}

func TestUntilTimeoutWrapsLastError(t *testing.T) {
	n := 0
	err := Until(context.Background(), 50*time.Millisecond, func(ctx context.Context) error {
		n++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("cond's context has no deadline")
		}
		return fmt.Errorf("try %d: %w", n, errSaw)
	})
	if !errors.Is(err, errSaw) {
		t.Fatalf("Until = %v, want it to wrap the last error", err)
	}
	want := fmt.Sprintf("not true after 50ms, %d tries: try %d: saw 2 of 3", n, n)
	if err.Error() != want {
		t.Fatalf("Until = %q, want %q", err, want)
	}
	if n < 2 {
		t.Fatalf("cond called %d times in 50ms, want it polled", n)
	}
}

func TestUntilStopsWhenParentIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Until(ctx, time.Hour, func(context.Context) error { return errSaw })
	if !errors.Is(err, errSaw) || !strings.Contains(err.Error(), "gave up after") || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Until = %v, want a give-up error naming the cancel and wrapping the last error", err)
	}
}

func TestUntilReturnsAStopAtOnce(t *testing.T) {
	n := 0
	err := Until(context.Background(), time.Hour, func(context.Context) error {
		n++
		return Stop(fmt.Errorf("exited: %w", errSaw))
	})
	if n != 1 || !errors.Is(err, errSaw) || err.Error() != "exited: saw 2 of 3" {
		t.Fatalf("Until = %q after %d calls, want the stopped error after 1", err, n)
	}
}

// recorder is a TB that records a failure instead of ending the test.
type recorder struct{ msg string }

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestEventuallyReportsWhatAndLastError(t *testing.T) {
	var r recorder
	Eventually(&r, 30*time.Millisecond, "the rollout", func() error { return errSaw })
	if !strings.HasPrefix(r.msg, "waiting for the rollout: not true after 30ms, ") || !strings.HasSuffix(r.msg, "tries: saw 2 of 3") {
		t.Fatalf("failure message %q", r.msg)
	}
	r = recorder{}
	Eventually(&r, time.Second, "nothing", func() error { return nil })
	if r.msg != "" {
		t.Fatalf("a holding condition failed the test: %q", r.msg)
	}
}
