package pod

import (
	"sync"
	"time"
)

// backoff is Kubernetes' per-key exponential back-off
// (k8s.io/client-go/util/flowcontrol.Backoff), used for container restarts
// and image pulls. An entry starts at initial, doubles on each failure up to
// max, and is forgotten when no failure happened for 2*max.
type backoff struct {
	initial, max time.Duration
	now          func() time.Time

	mu      sync.Mutex
	entries map[string]*backoffEntry
}

type backoffEntry struct {
	delay      time.Duration
	lastUpdate time.Time
}

func newBackoff(initial, max time.Duration, now func() time.Time) *backoff {
	return &backoff{initial: initial, max: max, now: now, entries: map[string]*backoffEntry{}}
}

func (b *backoff) expired(e *backoffEntry, t time.Time) bool {
	return t.Sub(e.lastUpdate) > 2*b.max
}

// backoffState is a copy of one key's back-off, taken when a sync starts,
// so that deciding needs no lock and a table test can write one.
type backoffState struct {
	// Delay is the current delay; zero: no entry (no failure recorded).
	Delay      time.Duration
	LastUpdate time.Time
	// Max is the back-off's maximum: an entry not updated for 2*Max is
	// forgotten.
	Max time.Duration
}

// state copies key's entry.
func (b *backoff) state(key string) backoffState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := backoffState{Max: b.max}
	if e := b.entries[key]; e != nil {
		s.Delay, s.LastUpdate = e.delay, e.lastUpdate
	}
	return s
}

// waitSince reports whether a retry must wait because the failure at
// eventTime (a container's finish time) is less than the delay before
// now, and until when (inBackoffSince on a copy).
func (s backoffState) waitSince(eventTime, now time.Time) (bool, time.Time) {
	if s.Delay == 0 || eventTime.Sub(s.LastUpdate) > 2*s.Max {
		return false, time.Time{}
	}
	until := eventTime.Add(s.Delay)
	return now.Before(until), until
}

// waitSinceUpdate reports whether less than the delay has passed since the
// last failure was recorded, and until when (inBackoffSinceUpdate on a
// copy).
func (s backoffState) waitSinceUpdate(now time.Time) (bool, time.Time) {
	if s.Delay == 0 || now.Sub(s.LastUpdate) > 2*s.Max {
		return false, time.Time{}
	}
	until := s.LastUpdate.Add(s.Delay)
	return now.Before(until), until
}

// next records a failure at eventTime: the entry starts at initial or
// doubles.
func (b *backoff) next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entries[key]
	if e == nil || b.expired(e, eventTime) {
		e = &backoffEntry{delay: b.initial}
		b.entries[key] = e
	} else {
		e.delay = min(2*e.delay, b.max)
	}
	e.lastUpdate = b.now()
}

// inBackoffSince reports whether a retry for key must wait because the
// failure at eventTime (a container's finish time) is less than the
// current delay ago, and until when.
func (b *backoff) inBackoffSince(key string, eventTime time.Time) (bool, time.Time) {
	return b.state(key).waitSince(eventTime, b.now())
}

// inBackoffSinceUpdate reports whether less than the current delay has
// passed since the last recorded failure (image pulls), and until when.
func (b *backoff) inBackoffSinceUpdate(key string) (bool, time.Time) {
	return b.state(key).waitSinceUpdate(b.now())
}

// delay is the current delay of key (0 without an entry).
func (b *backoff) delay(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e := b.entries[key]; e != nil {
		return e.delay
	}
	return 0
}

// reset forgets key.
func (b *backoff) reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// forgetPrefix forgets every key starting with prefix (a pod's UID).
func (b *backoff) forgetPrefix(prefix string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for k := range b.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(b.entries, k)
		}
	}
}
