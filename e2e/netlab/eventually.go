package netlab

import (
	"context"
	"time"

	"github.com/tugboat/tugboat/api/wait"
)

// Eventually is wait.Until, the one poll-until helper: it calls cond until
// it returns nil, gives up after timeout (or when ctx is done) with an
// error that wraps cond's last error.
func Eventually(ctx context.Context, timeout time.Duration, cond func(context.Context) error) error {
	return wait.Until(ctx, timeout, cond)
}
