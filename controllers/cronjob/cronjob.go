// Package cronjob is the CronJob controller (batch/v1): it creates a Job
// from each CronJob's jobTemplate at the times its schedule names.
//
// Loop (on the controller skeleton): CronJob and Job events enqueue the
// CronJob's key, and each sync asks its Clock to enqueue it again at the
// next scheduled time. Sync reads the CronJob's Jobs (controlling
// ownerReferences), drops finished ones from status.active (Event
// SawCompletedJob, lastSuccessfulTime), deletes the oldest finished Jobs
// beyond successfulJobsHistoryLimit/failedJobsHistoryLimit, and unless
// suspended finds the most recent scheduled time it has not yet acted on
// (after lastScheduleTime, or creation; within startingDeadlineSeconds if
// set). It then creates one Job, named <cronjob>-<scheduled time in
// minutes> so a retried create cannot make two, obeying
// concurrencyPolicy: Allow runs it beside the active ones, Forbid waits
// while one is active (JobAlreadyActive; it runs when they finish if the
// deadline allows), Replace deletes the active ones first.
//
// Missed schedules (the controller-manager was down, or the CronJob was
// suspended) start at most one Job, for the most recent missed time, as
// Kubernetes does: no flood of catch-up Jobs; more than 100 missed times
// are reported (TooManyMissedTimes). Times after a starting deadline are
// skipped (MissSchedule).
//
// Events: SuccessfulCreate, FailedCreate, SawCompletedJob,
// SuccessfulDelete, JobAlreadyActive, MissSchedule, TooManyMissedTimes,
// UnexpectedJob. Metrics: tugboat_controller_manager_cronjob_jobs_created_total,
// tugboat_controller_manager_cronjob_missed_schedules_total.
package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/controllers/controller"
)

// ScheduledTimeAnnotation on a Job is the time it was scheduled for (RFC 3339).
const ScheduledTimeAnnotation = "batch.kubernetes.io/cronjob-scheduled-timestamp"

// Config tunes the controller.
type Config struct {
	// Workers is how many CronJobs sync at once (--concurrent-cronjob-syncs, default 5).
	Workers int
	// Clock is the time source (default the wall clock); tests step a fake one.
	Clock controller.Clock
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if c.Workers < 0 {
		return fmt.Errorf("--concurrent-cronjob-syncs: must be >= 0, got %d", c.Workers)
	}
	return nil
}

// Controller is the CronJob controller.
type Controller struct {
	cfg     Config
	cjAPI   *client.Typed[*v1.CronJob]
	jobAPI  *client.Typed[*v1.Job]
	cjs     controller.Source[*v1.CronJob]
	jobs    controller.Source[*v1.Job]
	owners  controller.Owners[*v1.CronJob]
	events  controller.Recorder
	loop    *controller.Controller
	log     *slog.Logger
	created prometheus.Counter
	missed  prometheus.Counter
}

// New builds the controller on the shared informers.
func New(d controller.Deps, cfg Config) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Workers == 0 {
		cfg.Workers = 5
	}
	if cfg.Clock == nil {
		cfg.Clock = controller.RealClock{}
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	c := &Controller{
		cfg: cfg, cjAPI: client.For[*v1.CronJob](d.Client), jobAPI: client.For[*v1.Job](d.Client),
		cjs: controller.For[*v1.CronJob](d.Informers), jobs: controller.For[*v1.Job](d.Informers),
		events: d.Recorder, log: log.With("controller", "cronjob"),
		created: controller.Register(d.Registry, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_cronjob_jobs_created_total", Help: "Jobs created by CronJobs."})),
		missed: controller.Register(d.Registry, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tugboat_controller_manager_cronjob_missed_schedules_total", Help: "Scheduled times skipped because their startingDeadlineSeconds had passed."})),
	}
	c.owners = controller.Owners[*v1.CronJob]{Source: c.cjs, Kind: "CronJob"}
	c.loop = controller.New(controller.Config{
		Name: "cronjob", Workers: cfg.Workers, Sync: c.sync, Metrics: d.Metrics, Logger: log,
		Synced: []func() bool{c.cjs.HasSynced, c.jobs.HasSynced},
	})
	c.jobs.AddIndex(controller.IndexControllerUID, controller.ControllerUIDIndex[*v1.Job])
	c.cjs.AddHandler(informer.Handler[*v1.CronJob]{
		OnAdd:    func(cj *v1.CronJob) { c.loop.EnqueueObject(cj) },
		OnUpdate: func(_, cj *v1.CronJob) { c.loop.EnqueueObject(cj) },
	})
	jobChanged := func(j *v1.Job) {
		m := j.GetMetadata()
		if cj := c.owners.Of(m.GetNamespace(), controller.ControllerRef(m)); cj != nil {
			c.loop.EnqueueObject(cj)
		}
	}
	c.jobs.AddHandler(informer.Handler[*v1.Job]{OnAdd: jobChanged, OnUpdate: func(_, j *v1.Job) { jobChanged(j) }, OnDelete: jobChanged})
	return c, nil
}

// Run runs the controller until ctx ends.
func (c *Controller) Run(ctx context.Context) error { return c.loop.Run(ctx) }

// requeueAt syncs key again at t on the controller's clock.
func (c *Controller) requeueAt(key string, t time.Time) {
	c.cfg.Clock.AfterFunc(t.Sub(c.cfg.Clock.Now()), func() { c.loop.Enqueue(key) })
}
