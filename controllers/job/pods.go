package job

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// manage creates or deletes pods so that the Job has as many active pods
// as it wants, waiting out the failure back-off before creating.
func (c *Controller) manage(ctx context.Context, log *slog.Logger, s *state) error {
	j := s.job
	sp := j.GetSpec()
	key := v1.Key(j)
	want := int(sp.GetParallelism())
	indexed := sp.GetCompletionMode() == "Indexed"
	var pending []int // indexes to create, lowest first
	var extra []*v1.Pod
	switch {
	case indexed:
		completed := parseIndexes(s.st.CompletedIndexes)
		held := map[int]bool{}
		for _, p := range oldestFirst(s.active) {
			i, ok := podIndex(p)
			if !ok || i >= int(sp.GetCompletions()) || held[i] || completed[i] {
				extra = append(extra, p) // a duplicate, invalid or already completed index
				continue
			}
			held[i] = true
		}
		for i := 0; i < int(sp.GetCompletions()); i++ {
			if !completed[i] && !held[i] {
				pending = append(pending, i)
			}
		}
		want = min(want, int(sp.GetCompletions())-len(completed))
	case sp.Completions == nil:
		if s.succeeded() > 0 {
			want = len(s.active) // a success: let the others finish, start none
		}
	default:
		want = min(want, int(sp.GetCompletions()-s.succeeded()))
	}
	want = max(want, 0)
	active := len(s.active) - len(extra)
	if diff := active - want; diff > 0 {
		extra = append(extra, newestFirst(without(s.active, extra))[:diff]...)
	}
	if len(extra) > 0 {
		uids := make([]string, len(extra))
		for i, p := range extra {
			uids[i] = p.GetMetadata().GetUid()
		}
		c.exp.ExpectDeletions(key, uids)
		err := c.deletePods(ctx, j, extra)
		s.active = without(s.active, extra)
		return err
	}
	n := min(want-active, c.cfg.BurstPods)
	if indexed {
		n = min(n, len(pending))
	}
	if n <= 0 {
		return nil
	}
	if wait := c.backoff(s); wait > 0 {
		log.Debug("waiting out the pod failure back-off", "wait", wait, "failed", s.failed())
		c.loop.EnqueueAfter(key, wait)
		return nil
	}
	c.exp.ExpectCreations(key, n)
	var mu sync.Mutex
	next := 0
	created, err := controller.SlowStart(n, 1, func() error {
		idx := -1
		if indexed {
			mu.Lock()
			idx = pending[next]
			next++
			mu.Unlock()
		}
		return c.createPod(ctx, j, idx)
	})
	for range n - created {
		c.exp.CreationObserved(key)
	}
	return err
}

// backoff is how long to wait before creating pods after failures: the
// base doubled per failure after the first, capped, from the newest failure.
func (c *Controller) backoff(s *state) time.Duration {
	failures := s.failed()
	if failures == 0 || s.lastFailure.IsZero() {
		return 0
	}
	d := c.cfg.PodBackoff
	for i := int32(1); i < failures && d < c.cfg.PodBackoffMax; i++ {
		d *= 2
	}
	d = min(d, c.cfg.PodBackoffMax)
	return s.lastFailure.Add(d).Sub(s.now)
}

// suspend stops a suspended Job's pods and says so in its conditions.
func (c *Controller) suspend(ctx context.Context, s *state) error {
	if controller.SetCondition(&s.st.Conditions, &v1.Condition{Type: "Suspended", Status: controller.True, Reason: "JobSuspended", Message: "Job suspended"}, s.now) {
		c.events.Eventf(s.job, controller.Normal, "Suspended", "Job suspended")
	}
	err := c.deletePods(ctx, s.job, s.active)
	s.active = nil
	return err
}

// resume starts the clock of a Job that starts or leaves suspension.
func (c *Controller) resume(s *state) {
	if controller.GetCondition(s.st.Conditions, "Suspended").GetStatus() == controller.True {
		controller.SetCondition(&s.st.Conditions, &v1.Condition{Type: "Suspended", Status: controller.False, Reason: "JobResumed", Message: "Job resumed"}, s.now)
		c.events.Eventf(s.job, controller.Normal, "Resumed", "Job resumed")
		s.st.StartTime = timestamppb.New(s.now)
	}
	if s.st.StartTime == nil {
		s.st.StartTime = timestamppb.New(s.now)
	}
}

// maxGenerateNamePrefix keeps generated pod names within a DNS label.
const maxGenerateNamePrefix = 58

// createPod creates one pod of the Job (index -1: not Indexed).
func (c *Controller) createPod(ctx context.Context, j *v1.Job, index int) error {
	t := j.GetSpec().GetTemplate()
	m := j.GetMetadata()
	prefix := m.GetName() + "-"
	if index >= 0 {
		prefix += strconv.Itoa(index) + "-"
	}
	if len(prefix) > maxGenerateNamePrefix {
		prefix = prefix[:maxGenerateNamePrefix]
	}
	pod := &v1.Pod{
		Metadata: &v1.ObjectMeta{
			GenerateName: prefix, Namespace: m.GetNamespace(),
			Labels: maps.Clone(t.GetMetadata().GetLabels()), Annotations: maps.Clone(t.GetMetadata().GetAnnotations()),
			OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(j, "batch/v1", "Job")},
			Finalizers:      []string{TrackingFinalizer},
		},
		Spec: proto.Clone(t.GetSpec()).(*v1.PodSpec),
	}
	if index >= 0 {
		is := strconv.Itoa(index)
		if pod.Metadata.Labels == nil {
			pod.Metadata.Labels = map[string]string{}
		}
		if pod.Metadata.Annotations == nil {
			pod.Metadata.Annotations = map[string]string{}
		}
		pod.Metadata.Labels[IndexLabel] = is
		pod.Metadata.Annotations[IndexAnnotation] = is
		for _, ct := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			ct.Env = append(ct.Env, &v1.EnvVar{Name: IndexEnv, Value: is})
		}
		if pod.Spec.Hostname == "" {
			if h := m.GetName() + "-" + is; len(h) <= 63 {
				pod.Spec.Hostname = h
			}
		}
	}
	out, err := c.podAPI.Create(ctx, pod)
	if err != nil {
		c.events.Eventf(j, controller.Warning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.events.Eventf(j, controller.Normal, "SuccessfulCreate", "Created pod: %s", out.GetMetadata().GetName())
	return nil
}

// deletePods stops pods of the Job: their finalizer is removed first, so
// that a pod the controller deletes (suspended, surplus, or the Job
// finished) is not counted as failed; a pod someone else deletes is.
func (c *Controller) deletePods(ctx context.Context, j *v1.Job, pods []*v1.Pod) error {
	key := v1.Key(j)
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := p.GetMetadata()
			// Released first: a pod the controller stops is not a failure.
			err := c.removeFinalizers(ctx, []*v1.Pod{p})
			if err == nil {
				_, err = c.podAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{})
			}
			if err != nil {
				c.exp.DeletionObserved(key, m.GetUid())
				if !apierrors.IsNotFound(err) {
					c.events.Eventf(j, controller.Warning, "FailedDelete", "Error deleting pod %s: %v", m.GetName(), err)
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
				return
			}
			c.events.Eventf(j, controller.Normal, "SuccessfulDelete", "Deleted pod: %s", m.GetName())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// releasePods removes the tracking finalizer from pods, returning those
// that no longer have it (or are gone).
func (c *Controller) releasePods(ctx context.Context, pods []*v1.Pod) ([]*v1.Pod, error) {
	var out []*v1.Pod
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.removeFinalizers(ctx, []*v1.Pod{p})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			out = append(out, p)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// removeFinalizers removes the tracking finalizer from each pod, noting
// each removal in c.removing until the cache shows it.
func (c *Controller) removeFinalizers(ctx context.Context, pods []*v1.Pod) error {
	var errs []error
	for _, p := range pods {
		m := p.GetMetadata()
		c.removing.expect(m.GetUid())
		_, err := c.podAPI.Mutate(ctx, m.GetNamespace(), m.GetName(), false, func(cur *v1.Pod) error {
			if cur.GetMetadata().GetUid() != m.GetUid() {
				return apierrors.New(apierrors.ErrNotFound, "pod %s was replaced", m.GetName())
			}
			cur.Metadata.Finalizers = slices.DeleteFunc(cur.Metadata.Finalizers, func(f string) bool { return f == TrackingFinalizer })
			return nil
		})
		if err = ignoreGone(err); err != nil {
			c.removing.observed(m.GetUid()) // the finalizer may still be there
			errs = append(errs, err)
			continue
		}
		// The informer may have shown the removal (or the pod's end)
		// before expect: then no event is left to drop the entry.
		if cur, ok := c.pods.Get(v1.Key(p)); !ok || cur.GetMetadata().GetUid() != m.GetUid() || !hasFinalizer(cur) {
			c.removing.observed(m.GetUid())
		}
	}
	return errors.Join(errs...)
}

// writeStatus stores st if it differs from the Job's status.
func (c *Controller) writeStatus(ctx context.Context, j *v1.Job, st *v1.JobStatus) (*v1.Job, error) {
	want := proto.Clone(st).(*v1.JobStatus)
	if u := want.GetUncountedTerminatedPods(); u != nil && len(u.Succeeded)+len(u.Failed) == 0 {
		want.UncountedTerminatedPods = nil
	}
	if proto.Equal(j.GetStatus(), want) {
		return j, nil
	}
	next := proto.Clone(j).(*v1.Job)
	next.Status = want
	return c.jobAPI.UpdateStatus(ctx, next)
}

func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func podIndex(p *v1.Pod) (int, bool) {
	v, ok := p.GetMetadata().GetAnnotations()[IndexAnnotation]
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(v)
	return i, err == nil && i >= 0 && strconv.Itoa(i) == v
}

func oldestFirst(pods []*v1.Pod) []*v1.Pod {
	out := slices.Clone(pods)
	sort.SliceStable(out, func(a, b int) bool {
		return out[a].GetMetadata().GetCreationTimestamp().AsTime().Before(out[b].GetMetadata().GetCreationTimestamp().AsTime())
	})
	return out
}

func newestFirst(pods []*v1.Pod) []*v1.Pod {
	out := oldestFirst(pods)
	slices.Reverse(out)
	return out
}

func without(pods, drop []*v1.Pod) []*v1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p *v1.Pod) bool { return slices.Contains(drop, p) })
}
