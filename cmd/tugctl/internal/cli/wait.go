package cli

import (
	"context"
	"time"
)

// SleepCtx waits d or until ctx ends; it reports whether d passed.
func SleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
