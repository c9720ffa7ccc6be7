package pod

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// terminate stops a pod that is being deleted (deletionTimestamp set) or
// that the API no longer has: every running container gets its stop
// signal and the grace period (in parallel), then SIGKILL; then the
// sandboxes are torn down (CNI DEL included) and the pod's directory is
// removed; last, a pod still in the API is deleted with grace 0, which
// finishes the graceful deletion the apiserver started.
func (w *worker) terminate(ctx context.Context, pod *v1.Pod, deleted bool) error {
	w.m.prober.RemovePod(w.uid)
	st, err := w.observe(ctx)
	if err != nil {
		return err
	}
	grace := terminationGrace(pod, deleted)
	var wg sync.WaitGroup
	errc := make(chan error, len(st.containers))
	for _, c := range st.containers {
		if c.State != runtime.ContainerRunning && c.State != runtime.ContainerUnknown {
			continue
		}
		wg.Add(1)
		go func(c runtime.ContainerStatus) {
			defer wg.Done()
			w.m.rec.Eventf(pod, eventNormal, "Killing", "Stopping container %s", c.Name)
			if err := w.m.rt.StopContainer(ctx, c.ID, grace); err != nil && !errors.Is(err, runtime.ErrNotFound) {
				errc <- fmt.Errorf("stop container %s: %w", c.Name, err)
			}
		}(c)
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, sb := range st.sandboxes {
		if err := teardownSandbox(ctx, w.m.rt, w.m.net, sb); err != nil {
			return err
		}
	}
	if err := removePodDir(w.m.cfg.PodDir(w.uid)); err != nil {
		return fmt.Errorf("removing the pod's directory: %w", err)
	}
	w.m.forget(w.uid)
	if deleted {
		return nil
	}
	return w.m.status.finishDeletion(ctx, pod)
}

// terminationGrace is how long containers get after the stop signal: the
// grace period of the deletion, else the pod's; a pod the API dropped
// without one (a forced delete) gets at most 2 s.
func terminationGrace(pod *v1.Pod, deleted bool) time.Duration {
	m := pod.GetMetadata()
	if m.GetDeletionTimestamp() != nil {
		return time.Duration(m.GetDeletionGracePeriodSeconds()) * time.Second
	}
	g := podGrace(pod)
	if deleted {
		g = min(g, 2*time.Second)
	}
	return g
}

// finishDeletion deletes the pod object with grace 0, guarded so that a
// new pod with the same name is never deleted by mistake.
func (s *statusManager) finishDeletion(ctx context.Context, pod *v1.Pod) error {
	meta := pod.GetMetadata()
	rv := s.resourceVersion(pod)
	zero := int64(0)
	for attempt := 0; attempt < 10; attempt++ {
		_, err := s.api.Delete(ctx, meta.GetNamespace(), meta.GetName(), client.DeleteOptions{GracePeriodSeconds: &zero, ResourceVersion: rv})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			s.forget(meta.GetUid())
			return nil
		case !apierrors.IsConflict(err):
			return fmt.Errorf("deleting the pod from the API: %w", err)
		}
		cur, err := s.api.Get(ctx, meta.GetNamespace(), meta.GetName())
		if apierrors.IsNotFound(err) || (err == nil && cur.GetMetadata().GetUid() != meta.GetUid()) {
			s.forget(meta.GetUid())
			return nil
		}
		if err != nil {
			return err
		}
		rv = cur.GetMetadata().GetResourceVersion()
	}
	return fmt.Errorf("deleting the pod from the API: still conflicting after 10 attempts")
}
