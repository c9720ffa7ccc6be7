package cronjob

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
	"github.com/tugboat/tugboat/controllers/controller"
)

// sync converges one CronJob.
func (c *Controller) sync(ctx context.Context, key string) error {
	cj, ok := c.cjs.Get(key)
	if !ok {
		return nil
	}
	now := c.cfg.Clock.Now()
	st, _ := proto.Clone(cj.GetStatus()).(*v1.CronJobStatus)
	if st == nil {
		st = &v1.CronJobStatus{}
	}
	jobs := c.jobs.ByIndex(controller.IndexControllerUID, cj.GetMetadata().GetUid())
	c.trackActive(cj, st, jobs)
	var errs []error
	if err := c.cleanupHistory(ctx, cj, jobs); err != nil {
		errs = append(errs, err)
	}
	if cj.GetMetadata().GetDeletionTimestamp() == nil && !cj.GetSpec().GetSuspend() {
		if err := c.schedule(ctx, cj, st, now); err != nil {
			errs = append(errs, err)
		}
	}
	if !proto.Equal(cj.GetStatus(), st) {
		next := proto.Clone(cj).(*v1.CronJob)
		next.Status = st
		if _, err := c.cjAPI.UpdateStatus(ctx, next); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// trackActive makes status.active the CronJob's unfinished Jobs.
func (c *Controller) trackActive(cj *v1.CronJob, st *v1.CronJobStatus, jobs []*v1.Job) {
	byUID := map[string]*v1.Job{}
	for _, j := range jobs {
		byUID[j.GetMetadata().GetUid()] = j
	}
	kept := st.Active[:0:0]
	for _, ref := range st.Active {
		j, ok := byUID[ref.GetUid()]
		switch {
		case !ok:
			// Deleted (by a user, the history cleanup or a Replace): no longer active.
		case finishedType(j) != "":
			c.events.Eventf(cj, controller.Normal, "SawCompletedJob", "Saw completed job: %s, status: %s", j.GetMetadata().GetName(), finishedType(j))
		default:
			kept = append(kept, ref)
		}
	}
	st.Active = kept
	for _, j := range jobs {
		typ := finishedType(j)
		if typ == "" && !hasRef(st.Active, j) && j.GetMetadata().GetDeletionTimestamp() == nil {
			st.Active = append(st.Active, jobRef(j))
		}
		if typ == "Complete" {
			if ct := j.GetStatus().GetCompletionTime(); ct != nil && (st.LastSuccessfulTime == nil || ct.AsTime().After(st.LastSuccessfulTime.AsTime())) {
				st.LastSuccessfulTime = ct
			}
		}
	}
}

// cleanupHistory deletes the oldest finished Jobs beyond the history limits.
func (c *Controller) cleanupHistory(ctx context.Context, cj *v1.CronJob, jobs []*v1.Job) error {
	var ok, failed []*v1.Job
	for _, j := range jobs {
		if j.GetMetadata().GetDeletionTimestamp() != nil {
			continue
		}
		switch finishedType(j) {
		case "Complete":
			ok = append(ok, j)
		case "Failed":
			failed = append(failed, j)
		}
	}
	var errs []error
	for _, g := range []struct {
		jobs  []*v1.Job
		limit *int32
	}{{ok, cj.GetSpec().SuccessfulJobsHistoryLimit}, {failed, cj.GetSpec().FailedJobsHistoryLimit}} {
		if g.limit == nil || len(g.jobs) <= int(*g.limit) {
			continue
		}
		sort.Slice(g.jobs, func(a, b int) bool { return startOf(g.jobs[a]).Before(startOf(g.jobs[b])) })
		for _, j := range g.jobs[:len(g.jobs)-int(*g.limit)] {
			errs = append(errs, c.deleteJob(ctx, cj, j))
		}
	}
	return errors.Join(errs...)
}

// schedule starts the Job of the most recent scheduled time not yet acted
// on, if it is due and allowed, and asks to be woken at the next one.
func (c *Controller) schedule(ctx context.Context, cj *v1.CronJob, st *v1.CronJobStatus, now time.Time) error {
	key := v1.Key(cj)
	sched, err := parse(cj)
	if err != nil {
		// Validated on the way in; a time zone the controller-manager
		// cannot load is its problem, not a retry's.
		c.events.Eventf(cj, controller.Warning, "UnparseableSchedule", "unparseable schedule %q: %v", cj.GetSpec().GetSchedule(), err)
		return controller.Permanent(err)
	}
	defer func() { c.requeueAt(key, sched.Next(now).Add(100*time.Millisecond)) }()
	t, missed := mostRecent(cj, sched, now)
	if t.IsZero() {
		return nil
	}
	if missed > 100 {
		c.events.Eventf(cj, controller.Warning, "TooManyMissedTimes",
			"too many missed start times: %d. Set or decrease .spec.startingDeadlineSeconds or check clock skew", missed)
	}
	if sds := cj.GetSpec().StartingDeadlineSeconds; sds != nil && t.Add(time.Duration(*sds)*time.Second).Before(now) {
		c.missed.Inc()
		c.events.Eventf(cj, controller.Warning, "MissSchedule", "Missed scheduled time to start a job: %s", t.UTC().Format(time.RFC1123Z))
		st.LastScheduleTime = timestamppb.New(t) // do not look at it again
		return nil
	}
	switch cj.GetSpec().GetConcurrencyPolicy() {
	case "Forbid":
		if len(st.Active) > 0 {
			c.events.Eventf(cj, controller.Normal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
			return nil
		}
	case "Replace":
		for _, ref := range st.Active {
			j, ok := c.jobs.Get(cj.GetMetadata().GetNamespace() + "/" + ref.GetName())
			if !ok || j.GetMetadata().GetUid() != ref.GetUid() {
				continue
			}
			if err := c.deleteJob(ctx, cj, j); err != nil {
				return err
			}
		}
		st.Active = nil
	}
	j, err := c.createJob(ctx, cj, t)
	if err != nil {
		return err
	}
	if !hasRef(st.Active, j) {
		st.Active = append(st.Active, jobRef(j))
	}
	st.LastScheduleTime = timestamppb.New(t)
	return nil
}

// parse reads the CronJob's schedule in its time zone.
func parse(cj *v1.CronJob) (cron.Schedule, error) {
	loc := time.Local
	if tz := cj.GetSpec().TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		if err != nil {
			return nil, fmt.Errorf("spec.timeZone: %w", err)
		}
		loc = l
	}
	return validation.CronSchedule(cj.GetSpec().GetSchedule(), loc)
}

// mostRecent is the latest scheduled time in (earliest, now], and how many
// scheduled times that interval held (missed ones included). earliest is
// lastScheduleTime, else the creation time, moved up to now minus
// startingDeadlineSeconds when that is later.
func mostRecent(cj *v1.CronJob, sched cron.Schedule, now time.Time) (time.Time, int) {
	earliest := cj.GetMetadata().GetCreationTimestamp().AsTime()
	if lst := cj.GetStatus().GetLastScheduleTime(); lst != nil {
		earliest = lst.AsTime()
	}
	if sds := cj.GetSpec().StartingDeadlineSeconds; sds != nil {
		if d := now.Add(-time.Duration(*sds) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	var last time.Time
	n := 0
	for t := sched.Next(earliest); !t.After(now); t = sched.Next(t) {
		last = t
		n++
		if n > 100_000 {
			break // a schedule every minute over two months: enough to know
		}
	}
	return last, n
}

// jobName is <cronjob>-<scheduled time in minutes>, as Kubernetes names them.
func jobName(cj *v1.CronJob, t time.Time) string {
	return fmt.Sprintf("%s-%d", cj.GetMetadata().GetName(), t.Unix()/60)
}

func (c *Controller) createJob(ctx context.Context, cj *v1.CronJob, t time.Time) (*v1.Job, error) {
	jt := cj.GetSpec().GetJobTemplate()
	m := cj.GetMetadata()
	j := &v1.Job{
		Metadata: &v1.ObjectMeta{
			Name: jobName(cj, t), Namespace: m.GetNamespace(),
			Labels: maps.Clone(jt.GetMetadata().GetLabels()), Annotations: maps.Clone(jt.GetMetadata().GetAnnotations()),
			OwnerReferences: []*v1.OwnerReference{controller.NewControllerRef(cj, "batch/v1", "CronJob")},
		},
		Spec: proto.Clone(jt.GetSpec()).(*v1.JobSpec),
	}
	if j.Metadata.Annotations == nil {
		j.Metadata.Annotations = map[string]string{}
	}
	j.Metadata.Annotations[ScheduledTimeAnnotation] = t.Format(time.RFC3339)
	out, err := c.jobAPI.Create(ctx, j)
	if apierrors.IsAlreadyExists(err) {
		// Created by an earlier attempt whose status write was lost, or
		// someone else's Job of the same name.
		existing, gerr := c.jobAPI.Get(ctx, m.GetNamespace(), j.Metadata.Name)
		if gerr != nil {
			return nil, gerr
		}
		if ref := controller.ControllerRef(existing.GetMetadata()); ref == nil || ref.Uid != m.GetUid() {
			c.events.Eventf(cj, controller.Warning, "UnexpectedJob", "Job %s exists and is not this CronJob's", j.Metadata.Name)
			return nil, controller.Permanent(err)
		}
		return existing, nil
	}
	if err != nil {
		c.events.Eventf(cj, controller.Warning, "FailedCreate", "Error creating job: %v", err)
		return nil, err
	}
	c.created.Inc()
	c.events.Eventf(cj, controller.Normal, "SuccessfulCreate", "Created job %s", out.GetMetadata().GetName())
	c.log.Info("created job", "cronjob", v1.Key(cj), "job", out.GetMetadata().GetName(), "scheduledTime", t)
	return out, nil
}

func (c *Controller) deleteJob(ctx context.Context, cj *v1.CronJob, j *v1.Job) error {
	m := j.GetMetadata()
	_, err := c.jobAPI.Delete(ctx, m.GetNamespace(), m.GetName(), client.DeleteOptions{PropagationPolicy: "Background"})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		c.events.Eventf(cj, controller.Warning, "FailedDelete", "Deleted job: %v", err)
		return err
	}
	c.events.Eventf(cj, controller.Normal, "SuccessfulDelete", "Deleted job %s", m.GetName())
	return nil
}

// finishedType is "Complete" or "Failed" for a finished Job, else "".
func finishedType(j *v1.Job) string {
	for _, c := range j.GetStatus().GetConditions() {
		if (c.Type == "Complete" || c.Type == "Failed") && c.Status == controller.True {
			return c.Type
		}
	}
	return ""
}

func startOf(j *v1.Job) time.Time {
	if t := j.GetStatus().GetStartTime(); t != nil {
		return t.AsTime()
	}
	return j.GetMetadata().GetCreationTimestamp().AsTime()
}

func jobRef(j *v1.Job) *v1.ObjectReference {
	m := j.GetMetadata()
	return &v1.ObjectReference{Kind: "Job", ApiVersion: "batch/v1", Namespace: m.GetNamespace(), Name: m.GetName(),
		Uid: m.GetUid(), ResourceVersion: m.GetResourceVersion()}
}

func hasRef(refs []*v1.ObjectReference, j *v1.Job) bool {
	for _, r := range refs {
		if r.GetUid() == j.GetMetadata().GetUid() {
			return true
		}
	}
	return false
}
