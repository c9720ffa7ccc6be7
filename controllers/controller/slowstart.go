package controller

import "sync"

// SlowStart calls fn count times in batches of initial, 2*initial, ... run
// in parallel, stopping after the first batch with a failure, so that a
// systematic failure (quota, bad template) costs a few calls, not hundreds.
// It returns how many calls succeeded and the first error.
func SlowStart(count, initial int, fn func() error) (int, error) {
	remaining, successes := count, 0
	for batch := min(remaining, initial); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fn(); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= batch
	}
	return successes, nil
}
