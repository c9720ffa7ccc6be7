package controller

import (
	"sync"
	"time"
)

// Expectations remember, per controller key, the creates and deletes a
// controller has issued but its informer has not yet shown it. Until they
// are observed (or expire) the controller must not act on its cache again,
// or a slow watch would make it create or delete twice.
//
// Creates are counted; deletes are tracked by pod uid, so seeing the same
// deletion twice (a graceful delete's update, then its removal) counts once.
type Expectations struct {
	ttl time.Duration
	now func() time.Time

	mu sync.Mutex
	m  map[string]*expectation
}

type expectation struct {
	adds    int
	deletes map[string]bool // uids still to observe
	at      time.Time
}

// NewExpectations makes an empty set. Expectations older than ttl are
// considered satisfied (a lost event must not wedge a controller forever;
// Kubernetes uses 5 minutes).
func NewExpectations(ttl time.Duration) *Expectations {
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	return &Expectations{ttl: ttl, now: time.Now, m: map[string]*expectation{}}
}

// Satisfied reports whether key may be synced against the cache: nothing
// outstanding, or what is outstanding has expired.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	x, ok := e.m[key]
	if !ok {
		return true
	}
	if x.adds <= 0 && len(x.deletes) == 0 {
		return true
	}
	return e.now().Sub(x.at) > e.ttl
}

// ExpectCreations records that n creates are about to be issued for key,
// replacing whatever was expected before.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m[key] = &expectation{adds: n, deletes: map[string]bool{}, at: e.now()}
}

// ExpectDeletions records that the objects with these uids are about to be
// deleted for key, replacing whatever was expected before.
func (e *Expectations) ExpectDeletions(key string, uids []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := &expectation{deletes: make(map[string]bool, len(uids)), at: e.now()}
	for _, u := range uids {
		x.deletes[u] = true
	}
	e.m[key] = x
}

// CreationObserved lowers key's outstanding creates by one (also used when
// a create was skipped or failed: it will never be observed).
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok && x.adds > 0 {
		x.adds--
	}
}

// DeletionObserved marks the deletion of uid observed for key.
func (e *Expectations) DeletionObserved(key, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.m[key]; ok {
		delete(x.deletes, uid)
	}
}

// Delete forgets key (its owner is gone).
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
