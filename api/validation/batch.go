// The batch group (batch/v1): Job and CronJob.

package validation

import (
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // timeZone is checked without relying on the host's zoneinfo (static binaries in FROM scratch images)

	"github.com/robfig/cron/v3"
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// maxIndexedCompletions caps Indexed Jobs as Kubernetes does (completions
// above 100,000 would make completedIndexes unwieldy).
const maxIndexedCompletions = 100000

// Job validates a job.
func Job(j *v1.Job) Errs {
	var errs Errs
	ObjectMeta(&errs, j.Metadata, true, DNSSubdomain)
	if j.Spec == nil {
		errs.Add("spec", "required")
		return errs
	}
	JobSpec(&errs, "spec", j.Spec)
	return errs
}

// JobSpec validates a Job's spec (also a CronJob's jobTemplate.spec).
func JobSpec(errs *Errs, path string, s *v1.JobSpec) {
	if s.Parallelism != nil && *s.Parallelism < 0 {
		errs.Add(path+".parallelism", "must be greater than or equal to 0")
	}
	if s.Completions != nil && *s.Completions < 0 {
		errs.Add(path+".completions", "must be greater than or equal to 0")
	}
	if s.ActiveDeadlineSeconds != nil && *s.ActiveDeadlineSeconds <= 0 {
		errs.Add(path+".activeDeadlineSeconds", "must be greater than 0")
	}
	if s.BackoffLimit != nil && *s.BackoffLimit < 0 {
		errs.Add(path+".backoffLimit", "must be greater than or equal to 0")
	}
	if s.TtlSecondsAfterFinished != nil && *s.TtlSecondsAfterFinished < 0 {
		errs.Add(path+".ttlSecondsAfterFinished", "must be greater than or equal to 0")
	}
	OneOf(errs, path+".completionMode", s.CompletionMode, "NonIndexed", "Indexed")
	if s.CompletionMode == "Indexed" {
		switch {
		case s.Completions == nil:
			errs.Add(path+".completions", "required when completionMode is Indexed")
		case *s.Completions > maxIndexedCompletions:
			errs.Add(path+".completions", "must be less than or equal to %d when completionMode is Indexed", maxIndexedCompletions)
		}
	}
	if s.GetManualSelector() {
		if s.Selector == nil {
			errs.Add(path+".selector", "required when manualSelector is true")
		}
	}
	if s.Selector != nil {
		selectorMatchesTemplate(errs, s.Selector, s.Template)
	}
	podTemplate(errs, path+".template", s.Template, "OnFailure", "Never")
	if p := s.PodFailurePolicy; p != nil {
		podFailurePolicy(errs, path+".podFailurePolicy", p, s.GetTemplate().GetSpec())
	}
}

func podFailurePolicy(errs *Errs, path string, p *v1.PodFailurePolicy, pod *v1.PodSpec) {
	if pod.GetRestartPolicy() != "Never" {
		errs.Add(path, "only valid when spec.template.spec.restartPolicy is Never")
	}
	if len(p.Rules) > 20 {
		errs.Add(path+".rules", "at most 20 rules, got %d", len(p.Rules))
	}
	containers := map[string]bool{}
	for _, c := range append(pod.GetInitContainers(), pod.GetContainers()...) {
		containers[c.Name] = true
	}
	for i, r := range p.Rules {
		rp := fmt.Sprintf("%s.rules[%d]", path, i)
		OneOf(errs, rp+".action", r.Action, "FailJob", "Ignore", "Count")
		if (r.OnExitCodes == nil) == (len(r.OnPodConditions) == 0) {
			errs.Add(rp, "exactly one of onExitCodes and onPodConditions must be set")
		}
		if e := r.OnExitCodes; e != nil {
			OneOf(errs, rp+".onExitCodes.operator", e.Operator, "In", "NotIn")
			if e.ContainerName != "" && !containers[e.ContainerName] {
				errs.Add(rp+".onExitCodes.containerName", "%q does not name a container of the pod template", e.ContainerName)
			}
			if len(e.Values) == 0 || len(e.Values) > 255 {
				errs.Add(rp+".onExitCodes.values", "must list 1 to 255 exit codes")
			}
			seen := map[int32]bool{}
			for j, v := range e.Values {
				if e.Operator == "In" && v == 0 {
					errs.Add(fmt.Sprintf("%s.onExitCodes.values[%d]", rp, j), "0 is not allowed with the In operator")
				}
				if seen[v] {
					errs.Add(fmt.Sprintf("%s.onExitCodes.values[%d]", rp, j), "%d is duplicated", v)
				}
				seen[v] = true
			}
		}
		for j, c := range r.OnPodConditions {
			cp := fmt.Sprintf("%s.onPodConditions[%d]", rp, j)
			if c.Type == "" {
				errs.Add(cp+".type", "required")
			}
			OneOf(errs, cp+".status", c.Status, "True", "False", "Unknown")
		}
	}
}

// JobUpdate checks what may not change in a job (old is stored): the
// selector, the pod template (unless the Job is suspended) and the
// completion mode and completions.
func JobUpdate(old, new *v1.Job) Errs {
	var errs Errs
	o, n := old.GetSpec(), new.GetSpec()
	selectorUnchanged(&errs, o.GetSelector(), n.GetSelector())
	if !proto.Equal(o.GetTemplate(), n.GetTemplate()) && !(o.GetSuspend() && n.GetSuspend()) {
		errs.Add("spec.template", "field is immutable (unless the Job is suspended)")
	}
	if o.GetCompletionMode() != n.GetCompletionMode() {
		errs.Add("spec.completionMode", "field is immutable")
	}
	if !sameInt32(o.Completions, n.Completions) {
		errs.Add("spec.completions", "field is immutable")
	}
	if !proto.Equal(o.GetPodFailurePolicy(), n.GetPodFailurePolicy()) {
		errs.Add("spec.podFailurePolicy", "field is immutable")
	}
	return errs
}

// sameInt32 reports whether two optional int32 fields hold the same value
// (both unset, or both set and equal).
func sameInt32(a, b *int32) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// maxCronJobNameLength leaves room for the suffix of the Jobs a CronJob
// makes ("-" and the scheduled time in minutes) within 63 characters.
const maxCronJobNameLength = 52

// CronSchedule parses a CronJob's schedule as the controller reads it:
// five fields or an @hourly-style descriptor, in loc.
func CronSchedule(schedule string, loc *time.Location) (cron.Schedule, error) {
	if strings.Contains(schedule, "TZ=") {
		return nil, fmt.Errorf("cannot use TZ or CRON_TZ in schedule, use the timeZone field instead")
	}
	if loc != nil && loc != time.Local {
		schedule = "CRON_TZ=" + loc.String() + " " + schedule
	}
	return cron.ParseStandard(schedule)
}

// CronJob validates a cron job.
func CronJob(c *v1.CronJob) Errs {
	var errs Errs
	ObjectMeta(&errs, c.Metadata, true, DNSSubdomain)
	if n := c.GetMetadata().GetName(); len(n) > maxCronJobNameLength {
		errs.Add("metadata.name", "must be no more than %d characters", maxCronJobNameLength)
	}
	s := c.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	var loc *time.Location
	if tz := s.TimeZone; tz != nil {
		l, err := time.LoadLocation(*tz)
		switch {
		case *tz == "" || *tz == "Local":
			errs.Add("spec.timeZone", "%q is not a valid time zone: give an IANA name such as Etc/UTC or Europe/Berlin", *tz)
		case err != nil:
			errs.Add("spec.timeZone", "unknown time zone %q", *tz)
		default:
			loc = l
		}
	}
	if s.Schedule == "" {
		errs.Add("spec.schedule", "required")
	} else if _, err := CronSchedule(s.Schedule, loc); err != nil {
		errs.Add("spec.schedule", "invalid schedule %q: %v", s.Schedule, err)
	}
	OneOf(&errs, "spec.concurrencyPolicy", s.ConcurrencyPolicy, "Allow", "Forbid", "Replace")
	if s.StartingDeadlineSeconds != nil && *s.StartingDeadlineSeconds < 0 {
		errs.Add("spec.startingDeadlineSeconds", "must be greater than or equal to 0")
	}
	if s.SuccessfulJobsHistoryLimit != nil && *s.SuccessfulJobsHistoryLimit < 0 {
		errs.Add("spec.successfulJobsHistoryLimit", "must be greater than or equal to 0")
	}
	if s.FailedJobsHistoryLimit != nil && *s.FailedJobsHistoryLimit < 0 {
		errs.Add("spec.failedJobsHistoryLimit", "must be greater than or equal to 0")
	}
	jt := s.JobTemplate
	if jt.GetSpec() == nil {
		errs.Add("spec.jobTemplate.spec", "required")
		return errs
	}
	if jt.Metadata != nil {
		Labels(&errs, "spec.jobTemplate.metadata.labels", jt.Metadata.Labels)
		Annotations(&errs, "spec.jobTemplate.metadata.annotations", jt.Metadata.Annotations)
	}
	if jt.Spec.GetManualSelector() || jt.Spec.Selector != nil {
		errs.Add("spec.jobTemplate.spec.selector", "must be empty: each Job's selector is generated from its uid")
	}
	JobSpec(&errs, "spec.jobTemplate.spec", jt.Spec)
	return errs
}
