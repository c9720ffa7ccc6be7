package pod

import (
	"context"
	"log/slog"
	"time"
)

// Each step of starting a pod is logged at debug level, one record per
// step, with the pod (the worker's logger), the step as the message and
// how long it took ("took", in seconds of the node's clock): "pod
// accepted", "volumes prepared", "sandbox made", "pod network ready"
// (its address known, its /etc files written), "image ready",
// "container created", "container started", and the status manager's
// "pod status written" (with "queued", the time from the status being
// computed to its write). `hack/bench/kubelet -trace` reads them into a
// per-pod timeline. Nothing is made unless the logger is at debug level.

// logStep logs a finished step that began at start.
func logStep(log *slog.Logger, msg string, start time.Time, err error, args ...any) {
	if !log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	args = append(args, "took", time.Since(start).Seconds())
	if err != nil {
		args = append(args, "err", err)
	}
	log.Debug(msg, args...)
}
