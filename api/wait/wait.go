// Package wait polls a condition until it holds or a deadline passes. It is
// how Tugboat waits for state it gets no event for: library code with Until,
// tests with Eventually. Nobody waits by a bare sleep.
//
// A condition is a func that returns nil when it holds and otherwise an
// error saying what it saw instead ("pod web-1 is Pending, not Running");
// the last such error is what a timeout reports, so a failed wait explains
// itself. The first retry comes soon, later ones back off to at most
// MaxInterval, so a condition that holds quickly costs little and one that
// takes seconds does not spin.
package wait

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The poll intervals: the first retry after FirstInterval, each later one
// twice the one before, up to MaxInterval.
const (
	FirstInterval = 10 * time.Millisecond
	MaxInterval   = 100 * time.Millisecond
)

// Until calls cond until it returns nil, and then returns nil. It gives up
// when timeout has passed or ctx is done and returns an error that says how
// long and how often it tried and wraps cond's last error (so errors.Is and
// errors.As see it). cond gets a context that ends at the deadline, for the
// calls it makes. A cond that knows it can no longer hold (the process it
// waits for has exited) returns Stop(err), and Until returns err at once.
func Until(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tries := 0
	for delay := FirstInterval; ; delay = min(delay*2, MaxInterval) {
		tries++
		last := cond(ctx)
		if last == nil {
			return nil
		}
		var stop stopError
		if errors.As(last, &stop) {
			return stop.err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			why := fmt.Sprintf("not true after %s", timeout)
			if parent.Err() != nil {
				why = fmt.Sprintf("gave up after %s (%v)", time.Since(start).Round(time.Millisecond), parent.Err())
			}
			return fmt.Errorf("%s, %d tries: %w", why, tries, last)
		case <-t.C:
		}
	}
}

// Stop wraps err so that Until (and Eventually) give up at once and return
// (report) err instead of polling on to the deadline.
func Stop(err error) error { return stopError{err} }

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// TB is the part of testing.TB that Eventually uses; a *testing.T or
// *testing.B is one. (An interface, so that this package does not link the
// testing package into the binaries that use Until.)
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Eventually polls cond as Until does and fails the test, naming what it
// waited for and cond's last error, if cond has not returned nil within
// timeout. Call it from the test's goroutine.
func Eventually(t TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Until(context.Background(), timeout, func(context.Context) error { return cond() }); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
