package job

import "sync"

// removals are the pods whose tracking finalizer this controller removed
// and whose removal the pod informer has not shown yet (Kubernetes' job
// controller keeps the same finalizerExpectations).
//
// The Job and Pod caches follow two watches, so neither waits for the
// other: a sync records a finished pod, removes its finalizer and counts
// it in status.failed/succeeded, and the Job's new status can reach the
// Job cache before the pod update that dropped the finalizer reaches the
// Pod cache. A sync in between would see a pod that is no longer in
// uncountedTerminatedPods yet still holds the finalizer, take it for a
// newly finished pod and count it a second time (a Job with backoffLimit 2
// failing after two pods). A pod in this set is treated as released.
//
// An entry is added before the removal is sent and dropped once the
// cache shows the pod without the finalizer or gone (or the removal
// failed): the check after the write covers an informer event that came
// before the entry, so no entry outlives its pod.
type removals struct {
	mu   sync.Mutex
	uids map[string]bool
}

func newRemovals() *removals { return &removals{uids: map[string]bool{}} }

// expect records that uid's finalizer is being removed.
func (r *removals) expect(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.uids[uid] = true
}

// observed drops uid: the cache shows its finalizer gone (or the removal
// did not happen).
func (r *removals) observed(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.uids, uid)
}

// pending reports whether uid's finalizer was removed but the cache does
// not show it yet.
func (r *removals) pending(uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.uids[uid]
}
