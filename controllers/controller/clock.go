package controller

import "time"

// Clock is a controller's time source. Controllers whose decisions follow
// the wall clock (CronJob schedules) take one, so tests can move time
// instead of waiting for it (controllertest.FakeClock).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f once d has passed on this clock (it may call f
	// later, never earlier).
	AfterFunc(d time.Duration, f func())
}

// RealClock is the wall clock.
type RealClock struct{}

// Now is time.Now.
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc is time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) { time.AfterFunc(d, f) }
