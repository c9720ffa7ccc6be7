package netlab

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEventually(t *testing.T) {
	ctx := t.Context()
	n := 0
	err := Eventually(ctx, 5*time.Second, func(context.Context) error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Errorf("Eventually = %v after %d calls, want nil after 3", err, n)
	}

	errNever := errors.New("never")
	err = Eventually(ctx, 50*time.Millisecond, func(context.Context) error { return errNever })
	if !errors.Is(err, errNever) || !strings.Contains(err.Error(), "not true after 50ms") {
		t.Errorf("timeout: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err = Eventually(cctx, time.Minute, func(context.Context) error { return errNever })
	if !errors.Is(err, errNever) || !strings.Contains(err.Error(), "canceled") {
		t.Errorf("cancelled: %v", err)
	}

	// cond's context ends at the deadline.
	err = Eventually(ctx, 50*time.Millisecond, func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cond context: %v", err)
	}
}
