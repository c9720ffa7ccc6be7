package containerd

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/moby/sys/signal"
)

// StopContainer implements runtime.ContainerRuntime: the stop signal,
// up to grace for the process to exit, then SIGKILL.
func (r *Runtime) StopContainer(ctx context.Context, id string, grace time.Duration) error {
	ctx = r.ns(ctx)
	ctr, labels, err := r.loadContainer(ctx, id)
	if err != nil {
		return err
	}
	task, err := ctr.Task(ctx, nil)
	if errdefs.IsNotFound(err) {
		_, err = r.reap(ctx, id) // records a lost task, if it was one
		return err
	}
	if err != nil {
		return wrap(err, "stop container %s", id)
	}
	st, err := task.Status(ctx)
	if err != nil {
		return wrap(err, "stop container %s", id)
	}
	switch st.Status {
	case client.Stopped:
		_, err := r.reap(ctx, id)
		return err
	case client.Created: // never started: nothing to signal
		if _, err := task.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
			return wrap(err, "stop container %s", id)
		}
		return nil
	}

	// Wait must be registered before the signal, or the exit can be missed.
	waitCtx, cancelWait := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWait()
	exited, err := task.Wait(waitCtx)
	if err != nil {
		return wrap(err, "stop container %s: wait", id)
	}
	if grace > 0 {
		sig := syscall.SIGTERM
		if s := labels[labelStopSignal]; s != "" {
			if parsed, err := signal.ParseSignal(s); err == nil {
				sig = parsed
			}
		}
		if err := task.Kill(ctx, sig); err != nil && !errdefs.IsNotFound(err) {
			return wrap(err, "stop container %s: signal %v", id, sig)
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-exited:
			_, err := r.reap(context.WithoutCancel(ctx), id)
			return err
		case <-timer.C:
			r.logger.Debug("grace period over, killing", "container", id, "grace", grace)
		case <-ctx.Done():
			r.logger.Debug("stop cancelled, killing", "container", id)
		}
	}
	killCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.KillTimeout)
	defer cancel()
	if err := task.Kill(killCtx, syscall.SIGKILL, client.WithKillAll); err != nil && !errdefs.IsNotFound(err) {
		return wrap(err, "stop container %s: kill", id)
	}
	select {
	case <-exited:
	case <-killCtx.Done():
		return fmt.Errorf("stop container %s: no exit %s after SIGKILL", id, r.cfg.KillTimeout)
	}
	_, err = r.reap(killCtx, id)
	return err
}
