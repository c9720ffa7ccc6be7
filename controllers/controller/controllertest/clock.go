package controllertest

import (
	"sync"
	"time"
)

// FakeClock is a controller.Clock that moves only when the test says so.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []waiter
}

type waiter struct {
	at time.Time
	f  func()
}

// NewFakeClock starts a clock at now.
func NewFakeClock(now time.Time) *FakeClock { return &FakeClock{now: now} }

// Now is the clock's time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f when the clock has moved d past now.
func (c *FakeClock) AfterFunc(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d <= 0 {
		go f()
		return
	}
	c.waiters = append(c.waiters, waiter{at: c.now.Add(d), f: f})
}

// Step moves the clock by d and calls every function now due.
func (c *FakeClock) Step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			due = append(due, w.f)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}
