// The batch group (batch/v1): Job and CronJob.

package validation

import (
	"fmt"

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
