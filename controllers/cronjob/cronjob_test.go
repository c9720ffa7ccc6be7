package cronjob_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/cronjob"
	"github.com/tugboat/tugboat/controllers/garbagecollector"
	"github.com/tugboat/tugboat/controllers/job"
)

const exitAnnotation = "test.tugboat.io/exit-code"

type env struct {
	ctx   context.Context
	c     *client.Client
	clock *controllertest.FakeClock
	cjs   *client.Typed[*v1.CronJob]
	jobs  *client.Typed[*v1.Job]
}

// start runs an apiserver, a fake cluster, the CronJob and Job
// controllers (the CronJob controller on a fake clock) and the garbage
// collector. The subtests share it, each in its own namespace, and move
// the clock only forwards.
func start(t *testing.T) *env {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	clock := controllertest.NewFakeClock(time.Now())
	cc, err := cronjob.New(d, cronjob.Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	jc, err := job.New(d, job.Config{})
	if err != nil {
		t.Fatal(err)
	}
	gc, err := garbagecollector.New(d, garbagecollector.Config{Kinds: []string{"CronJob", "Job", "Pod"}})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1"},
		Exit: func(p *v1.Pod) (int32, bool) {
			v, ok := p.GetMetadata().GetAnnotations()[exitAnnotation]
			n, _ := strconv.Atoi(v)
			return int32(n), ok
		}})
	controllertest.RunAll(ctx, t, d.Informers, cc, jc, gc)
	return &env{ctx: ctx, c: s.Client, clock: clock, cjs: client.For[*v1.CronJob](s.Client), jobs: client.For[*v1.Job](s.Client)}
}

func (e *env) create(t *testing.T, ns, name, policy string, exits bool) {
	t.Helper()
	if _, err := client.For[*v1.Namespace](e.c).Create(e.ctx, &v1.Namespace{Metadata: &v1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	ann := map[string]string{}
	if exits {
		ann[exitAnnotation] = "0"
	}
	cj := &v1.CronJob{Metadata: &v1.ObjectMeta{Name: name, Namespace: ns}, Spec: &v1.CronJobSpec{
		Schedule: "*/1 * * * *", ConcurrencyPolicy: policy, SuccessfulJobsHistoryLimit: proto.Int32(2),
		JobTemplate: &v1.JobTemplateSpec{Spec: &v1.JobSpec{Template: &v1.PodTemplateSpec{
			Metadata: &v1.ObjectMeta{Annotations: ann},
			Spec: &v1.PodSpec{RestartPolicy: "OnFailure", Containers: []*v1.Container{{Name: "hello", Image: "tugboat.local/busybox:latest",
				Command: []string{"sh", "-c", "date; echo Hello from the Kubernetes cluster"}}}}}}},
	}}
	if _, err := e.cjs.Create(e.ctx, cj); err != nil {
		t.Fatal(err)
	}
}

// jobsOf lists the CronJob's Jobs by name.
func (e *env) jobsOf(t *testing.T, ns string) map[string]*v1.Job {
	t.Helper()
	list, _, err := e.jobs.List(e.ctx, client.ListOptions{Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*v1.Job{}
	for _, j := range list {
		if j.Metadata.DeletionTimestamp == nil {
			out[j.Metadata.Name] = j
		}
	}
	return out
}

// minuteAfter steps the fake clock just past the next whole minute and
// returns the Job name that minute schedules.
func (e *env) nextMinute(name string) string {
	now := e.clock.Now()
	next := now.Truncate(time.Minute).Add(time.Minute)
	e.clock.Step(next.Sub(now) + time.Second)
	return fmt.Sprintf("%s-%d", name, next.Unix()/60)
}

func TestCronJob(t *testing.T) {
	e := start(t)
	// Sequential: they share the clock.

	// Every minute a Job named for its minute; history keeps 2 successes.
	t.Run("EveryMinuteAndHistory", func(t *testing.T) {
		e.create(t, "hello", "hello", "Allow", true)
		var made []string
		for range 3 {
			name := e.nextMinute("hello")
			made = append(made, name)
			wait.Eventually(t, 20*time.Second, "job "+name+" to complete", func() error {
				j, ok := e.jobsOf(t, "hello")[name]
				if !ok {
					return fmt.Errorf("no job %s", name)
				}
				if c := controller.GetCondition(j.GetStatus().GetConditions(), "Complete"); c == nil || c.Status != "True" {
					return fmt.Errorf("job %s: %v", name, j.GetStatus())
				}
				if j.Metadata.Annotations[cronjob.ScheduledTimeAnnotation] == "" {
					return fmt.Errorf("no scheduled-time annotation")
				}
				return nil
			})
		}
		wait.Eventually(t, 20*time.Second, "history pruned to 2 and status updated", func() error {
			jobs := e.jobsOf(t, "hello")
			if _, ok := jobs[made[0]]; ok || len(jobs) != 2 {
				return fmt.Errorf("jobs %v", keys(jobs))
			}
			cj, err := e.cjs.Get(e.ctx, "hello", "hello")
			if err != nil {
				return err
			}
			if cj.Status.GetLastScheduleTime() == nil || cj.Status.GetLastSuccessfulTime() == nil || len(cj.Status.Active) != 0 {
				return fmt.Errorf("status %v", cj.Status)
			}
			return nil
		})
	})

	// The fake clock is now minutes ahead of the next CronJobs' creation,
	// so each one's first sync starts the Job of the most recent of the
	// minutes it "missed" at once: one Job, not one per minute.
	firstJob := func(t *testing.T, ns string) string {
		t.Helper()
		var name string
		wait.Eventually(t, 20*time.Second, "the catch-up job to be active", func() error {
			cj, err := e.cjs.Get(e.ctx, ns, ns)
			if err != nil {
				return err
			}
			if a := cj.GetStatus().GetActive(); len(a) == 1 {
				name = a[0].Name
				return nil
			}
			return fmt.Errorf("status %v", cj.GetStatus())
		})
		if jobs := e.jobsOf(t, ns); len(jobs) != 1 {
			t.Fatalf("catching up made %d jobs: %v", len(jobs), keys(jobs))
		}
		return name
	}

	// Forbid: while a Job runs, the next minute starts nothing.
	t.Run("ForbidSkipsWhileRunning", func(t *testing.T) {
		e.create(t, "forbid", "forbid", "Forbid", false)
		firstJob(t, "forbid")
		e.nextMinute("forbid")
		wait.Eventually(t, 20*time.Second, "a JobAlreadyActive event", func() error {
			return hasEvent(e, "forbid", "JobAlreadyActive")
		})
		if jobs := e.jobsOf(t, "forbid"); len(jobs) != 1 {
			t.Fatalf("Forbid started another job: %v", keys(jobs))
		}
	})

	// Missed schedules (ten minutes at once, as after a controller-manager
	// outage) start one Job, for the most recent time: no flood.
	t.Run("MissedSchedulesNoFlood", func(t *testing.T) {
		e.create(t, "missed", "missed", "Allow", false)
		first := firstJob(t, "missed")
		now := e.clock.Now()
		e.clock.Step(10 * time.Minute)
		last := fmt.Sprintf("missed-%d", now.Add(10*time.Minute).Truncate(time.Minute).Unix()/60)
		wait.Eventually(t, 20*time.Second, "one job for the last missed minute", func() error {
			jobs := e.jobsOf(t, "missed")
			if len(jobs) != 2 || jobs[first] == nil || jobs[last] == nil {
				return fmt.Errorf("jobs %v, want %s and %s", keys(jobs), first, last)
			}
			return nil
		})
	})
}

func hasEvent(e *env, ns, reason string) error {
	evs, _, err := client.For[*v1.Event](e.c).List(e.ctx, client.ListOptions{Namespace: ns})
	if err != nil {
		return err
	}
	var seen []string
	for _, ev := range evs {
		if ev.Reason == reason {
			return nil
		}
		seen = append(seen, ev.Reason)
	}
	return fmt.Errorf("events %s", strings.Join(seen, ","))
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
