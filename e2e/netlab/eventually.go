package netlab

import (
	"context"
	"fmt"
	"time"
)

// Poll intervals of Eventually: the first retry comes soon, later ones
// back off to at most maxPoll.
const (
	firstPoll = 10 * time.Millisecond
	maxPoll   = 250 * time.Millisecond
)

// Eventually calls cond until it returns nil, and then returns nil. It gives
// up when timeout has passed or ctx is done, and returns an error that says
// how long and how often it tried and wraps cond's last error. cond gets a
// context that ends at the deadline, for the calls it makes. This is how
// e2e tests wait: by polling a condition with a deadline, never by sleeping.
func Eventually(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	pctx := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tries := 0
	for delay := firstPoll; ; delay = min(delay*2, maxPoll) {
		tries++
		last := cond(ctx)
		if last == nil {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			why := fmt.Sprintf("not true after %s", timeout)
			if pctx.Err() != nil {
				why = fmt.Sprintf("gave up after %s (%v)", time.Since(start).Round(time.Millisecond), pctx.Err())
			}
			return fmt.Errorf("%s, %d tries: %w", why, tries, last)
		case <-t.C:
		}
	}
}
