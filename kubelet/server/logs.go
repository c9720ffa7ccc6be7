package server

import (
	"context"
	"errors"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Logs implements NodeAPI.Logs: the log of the container's current
// attempt, or with previous of the one before. Follow streams what the
// container writes until it exits or the caller goes away. A CRI
// runtime's log (the CRI log format) is decoded, with each line's time
// first for timestamps and older lines skipped for since; the native
// backend keeps the container's raw output, with no time per line, so
// timestamps and since are refused there.
func (s *Server) Logs(req *v1.LogsRequest, stream v1.NodeAPI_LogsServer) error {
	ctx := stream.Context()
	var since time.Time
	switch {
	case req.SinceSeconds < 0:
		return errorf(apierrors.ErrInvalid, "sinceSeconds: %d: must be positive", req.SinceSeconds)
	case req.LimitBytes < 0:
		return errorf(apierrors.ErrInvalid, "limitBytes: %d: must be positive", req.LimitBytes)
	case req.SinceSeconds > 0 && req.SinceTime != nil:
		return errorf(apierrors.ErrInvalid, "sinceSeconds, sinceTime: at most one of them")
	case req.SinceSeconds > 0:
		since = time.Now().Add(-time.Duration(req.SinceSeconds) * time.Second)
	case req.SinceTime != nil:
		since = req.SinceTime.AsTime()
	}
	pod, name, err := s.pod(req.Namespace, req.Pod, req.Container)
	if err != nil {
		return grpcErr(err)
	}
	as, err := s.attempts(ctx, pod, name)
	if err != nil {
		return grpcErr(err)
	}
	var c runtime.ContainerStatus
	switch {
	case req.Previous && len(as) < 2:
		return errorf(apierrors.ErrInvalid, "previous terminated container %q in pod %q not found", name, pod.GetMetadata().GetName())
	case req.Previous:
		c = as[1]
	case len(as) == 0:
		return errorf(apierrors.ErrInvalid, "container %q in pod %q is waiting to start: %s", name, pod.GetMetadata().GetName(), waitingReason(pod, name))
	default:
		c = as[0]
	}
	opts := runtime.LogOptions{TailLines: int(req.TailLines), LimitBytes: req.LimitBytes,
		Format: c.LogFormat, Timestamps: req.Timestamps, Since: since}
	if (opts.Timestamps || !since.IsZero()) && c.LogFormat != runtime.LogFormatCRI {
		what := "timestamps"
		if !since.IsZero() {
			what = "since"
		}
		return errorf(apierrors.ErrInvalid, "%s: not supported by node %s's runtime backend: it keeps container logs as raw output, with no time per line (the CRI backend, --runtime cri, has them)", what, s.cfg.NodeName)
	}
	if req.Follow && !req.Previous && c.State != runtime.ContainerExited {
		opts.Follow = true
		done := make(chan struct{})
		opts.Done = done
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.closeWhenExited(fctx, c.ID, done)
	}
	w := &chunkWriter{send: func(b []byte) error { return stream.Send(&v1.LogsChunk{Data: b}) }}
	err = runtime.ReadLog(ctx, c.LogPath, opts, w)
	switch {
	case errors.Is(err, runtime.ErrNotFound):
		return nil // started, nothing written yet
	case err != nil && ctx.Err() != nil:
		return nil // the caller went away
	case err != nil:
		return grpcErr(err)
	}
	return nil
}

// closeWhenExited closes done once the container is no longer running.
func (s *Server) closeWhenExited(ctx context.Context, id string, done chan<- struct{}) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		st, err := s.cfg.Runtime.ContainerStatus(ctx, id)
		if errors.Is(err, runtime.ErrNotFound) || (err == nil && st.State == runtime.ContainerExited) {
			close(done)
			return
		}
	}
}

// chunkWriter sends each write as one message (copying it: the caller
// reuses its buffer).
type chunkWriter struct {
	send func([]byte) error
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); off += maxChunk {
		end := min(off+maxChunk, len(p))
		if err := c.send(append([]byte(nil), p[off:end]...)); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

// maxChunk bounds one message's payload.
const maxChunk = 32 << 10
