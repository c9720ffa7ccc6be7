package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

func job() *v1.Job {
	p := pod()
	p.Spec.RestartPolicy = "Never"
	return &v1.Job{
		Metadata: &v1.ObjectMeta{Name: "pi", Namespace: "default", Uid: "u-1"},
		Spec: &v1.JobSpec{Completions: proto.Int32(3), Parallelism: proto.Int32(2),
			Template: &v1.PodTemplateSpec{Spec: p.Spec}},
	}
}

func TestBatchValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid job", func() v1.Object { return job() }, nil},
		{"job without spec", func() v1.Object { j := job(); j.Spec = nil; return j }, []string{"spec: required"}},
		{"negative completions", func() v1.Object { j := job(); j.Spec.Completions = proto.Int32(-1); return j },
			[]string{"spec.completions: must be greater than or equal to 0"}},
		{"negative parallelism", func() v1.Object { j := job(); j.Spec.Parallelism = proto.Int32(-1); return j }, []string{"spec.parallelism"}},
		{"negative backoffLimit", func() v1.Object { j := job(); j.Spec.BackoffLimit = proto.Int32(-1); return j }, []string{"spec.backoffLimit"}},
		{"zero deadline", func() v1.Object { j := job(); j.Spec.ActiveDeadlineSeconds = proto.Int64(0); return j },
			[]string{"spec.activeDeadlineSeconds: must be greater than 0"}},
		{"restartPolicy Always", func() v1.Object { j := job(); j.Spec.Template.Spec.RestartPolicy = "Always"; return j },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Always"`}},
		{"restartPolicy unset", func() v1.Object { j := job(); j.Spec.Template.Spec.RestartPolicy = ""; return j },
			[]string{`spec.template.spec.restartPolicy`}},
		{"indexed without completions", func() v1.Object {
			j := job()
			j.Spec.CompletionMode, j.Spec.Completions = "Indexed", nil
			return j
		}, []string{"spec.completions: required when completionMode is Indexed"}},
		{"bad completionMode", func() v1.Object { j := job(); j.Spec.CompletionMode = "Sparse"; return j }, []string{"spec.completionMode"}},
		{"manual selector missing", func() v1.Object { j := job(); j.Spec.ManualSelector = proto.Bool(true); return j },
			[]string{"spec.selector: required when manualSelector is true"}},
		{"failure policy with OnFailure", func() v1.Object {
			j := job()
			j.Spec.Template.Spec.RestartPolicy = "OnFailure"
			j.Spec.PodFailurePolicy = &v1.PodFailurePolicy{Rules: []*v1.PodFailurePolicyRule{{Action: "FailJob",
				OnExitCodes: &v1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}}}}}
			return j
		}, []string{"spec.podFailurePolicy: only valid when spec.template.spec.restartPolicy is Never"}},
		{"failure policy rule", func() v1.Object {
			j := job()
			j.Spec.PodFailurePolicy = &v1.PodFailurePolicy{Rules: []*v1.PodFailurePolicyRule{{Action: "Restart",
				OnExitCodes: &v1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{0}, ContainerName: "nope"}}}}
			return j
		}, []string{"spec.podFailurePolicy.rules[0].action", "onExitCodes.values[0]: 0 is not allowed", `containerName: "nope" does not name`}},
	})
}

// The generated selector and labels carry the Job's uid.
func TestJobDefaults(t *testing.T) {
	j := job()
	j.Spec.Completions, j.Spec.Parallelism = nil, nil
	k, _ := kinds.Lookup("Job")
	k.Default(j)
	if j.Spec.GetCompletions() != 1 || j.Spec.GetParallelism() != 1 || j.Spec.GetBackoffLimit() != 6 || j.Spec.CompletionMode != "NonIndexed" {
		t.Fatalf("defaults: %v", j.Spec)
	}
	if j.Spec.Selector.MatchLabels[kinds.JobControllerUIDLabel] != "u-1" || j.Spec.Template.Metadata.Labels["job-name"] != "pi" {
		t.Fatalf("selector %v, labels %v", j.Spec.Selector, j.Spec.Template.Metadata.Labels)
	}
}

func TestJobUpdate(t *testing.T) {
	k, _ := kinds.Lookup("Job")
	old := job()
	k.Default(old)
	n := proto.Clone(old).(*v1.Job)
	n.Spec.Completions = proto.Int32(5)
	n.Spec.Template.Spec.Containers[0].Image = "other"
	got := validation.JobUpdate(old, n).Err("Job", "pi").Error()
	for _, want := range []string{"spec.completions: field is immutable", "spec.template: field is immutable"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not contain %q", got, want)
		}
	}
	n = proto.Clone(old).(*v1.Job)
	n.Spec.Parallelism = proto.Int32(4)
	n.Spec.Suspend = proto.Bool(true)
	if errs := validation.JobUpdate(old, n); len(errs) != 0 {
		t.Errorf("parallelism and suspend may change: %v", errs)
	}
}

func cronJob() *v1.CronJob {
	return &v1.CronJob{Metadata: &v1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: &v1.CronJobSpec{Schedule: "*/1 * * * *", JobTemplate: &v1.JobTemplateSpec{Spec: job().Spec}}}
}

func TestCronJobValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid cronjob", func() v1.Object { return cronJob() }, nil},
		{"hourly", func() v1.Object { c := cronJob(); c.Spec.Schedule = "@hourly"; return c }, nil},
		{"time zone", func() v1.Object { c := cronJob(); c.Spec.TimeZone = proto.String("Europe/Berlin"); return c }, nil},
		{"invalid schedule", func() v1.Object { c := cronJob(); c.Spec.Schedule = "61 * * * *"; return c },
			[]string{`spec.schedule: invalid schedule "61 * * * *"`}},
		{"six fields", func() v1.Object { c := cronJob(); c.Spec.Schedule = "0 */1 * * * *"; return c }, []string{"spec.schedule"}},
		{"TZ in schedule", func() v1.Object { c := cronJob(); c.Spec.Schedule = "CRON_TZ=UTC 0 * * * *"; return c },
			[]string{"use the timeZone field instead"}},
		{"unknown time zone", func() v1.Object { c := cronJob(); c.Spec.TimeZone = proto.String("Mars/Olympus"); return c },
			[]string{`spec.timeZone: unknown time zone "Mars/Olympus"`}},
		{"no schedule", func() v1.Object { c := cronJob(); c.Spec.Schedule = ""; return c }, []string{"spec.schedule: required"}},
		{"bad concurrency policy", func() v1.Object { c := cronJob(); c.Spec.ConcurrencyPolicy = "Sometimes"; return c },
			[]string{"spec.concurrencyPolicy"}},
		{"negative history", func() v1.Object { c := cronJob(); c.Spec.FailedJobsHistoryLimit = proto.Int32(-1); return c },
			[]string{"spec.failedJobsHistoryLimit"}},
		{"long name", func() v1.Object { c := cronJob(); c.Metadata.Name = strings.Repeat("a", 53); return c },
			[]string{"metadata.name: must be no more than 52 characters"}},
		{"template completions", func() v1.Object { c := cronJob(); c.Spec.JobTemplate.Spec.Completions = proto.Int32(-1); return c },
			[]string{"spec.jobTemplate.spec.completions: must be greater than or equal to 0"}},
		{"template restart policy", func() v1.Object {
			c := cronJob()
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = "Always"
			return c
		}, []string{"spec.jobTemplate.spec.template.spec.restartPolicy"}},
	})
}
