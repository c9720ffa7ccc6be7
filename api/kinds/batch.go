// The batch group (batch/v1): its kinds and their defaults.

package kinds

import (
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// batchKinds is the batch group, batch/v1.
var batchKinds = []*Kind{
	{Name: "Job", Plural: "jobs", APIVersion: "batch/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Job{} }, Default: typedDefault(defaultJob), Validate: typed(validation.Job),
		ValidateUpdate: typedUpdate(validation.JobUpdate)},
	{Name: "CronJob", Plural: "cronjobs", Short: []string{"cj"}, APIVersion: "batch/v1", Namespaced: true,
		New: func() v1.Object { return &v1.CronJob{} }, Default: typedDefault(defaultCronJob), Validate: typed(validation.CronJob)},
}

// The labels Kubernetes puts on a Job's pods and generated selector.
const (
	JobControllerUIDLabel       = "batch.kubernetes.io/controller-uid"
	JobNameLabel                = "batch.kubernetes.io/job-name"
	legacyJobControllerUIDLabel = "controller-uid"
	legacyJobNameLabel          = "job-name"
)

func defaultJob(j *v1.Job) {
	s := j.Spec
	if s == nil {
		return
	}
	defaultJobSpec(s)
	// The generated selector: the Job's uid (set before defaulting).
	if !s.GetManualSelector() && s.Selector == nil && s.Template != nil {
		uid, name := j.GetMetadata().GetUid(), j.GetMetadata().GetName()
		if uid == "" {
			return // defaulted again by the apiserver once it has a uid
		}
		s.Selector = &v1.LabelSelector{MatchLabels: map[string]string{JobControllerUIDLabel: uid}}
		if s.Template.Metadata == nil {
			s.Template.Metadata = &v1.ObjectMeta{}
		}
		l := s.Template.Metadata.Labels
		if l == nil {
			l = map[string]string{}
			s.Template.Metadata.Labels = l
		}
		l[JobControllerUIDLabel], l[legacyJobControllerUIDLabel] = uid, uid
		l[JobNameLabel], l[legacyJobNameLabel] = name, name
	}
}

// defaultJobSpec defaults a Job's spec, or a CronJob's Job template's
// (whose selector is generated when the Job is made).
func defaultJobSpec(s *v1.JobSpec) {
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = proto.Int32(1)
	}
	if s.Parallelism == nil {
		s.Parallelism = proto.Int32(1)
	}
	if s.BackoffLimit == nil {
		s.BackoffLimit = proto.Int32(6)
	}
	if s.CompletionMode == "" {
		s.CompletionMode = "NonIndexed"
	}
	if s.Suspend == nil {
		s.Suspend = proto.Bool(false)
	}
	if s.ManualSelector == nil {
		s.ManualSelector = proto.Bool(false)
	}
	for _, r := range s.GetPodFailurePolicy().GetRules() {
		for _, p := range r.OnPodConditions {
			if p.Status == "" {
				p.Status = "True"
			}
		}
	}
	defaultTemplate(s.Template)
}

func defaultCronJob(c *v1.CronJob) {
	s := c.Spec
	if s == nil {
		return
	}
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = "Allow"
	}
	if s.Suspend == nil {
		s.Suspend = proto.Bool(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = proto.Int32(3)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = proto.Int32(1)
	}
	if js := s.GetJobTemplate().GetSpec(); js != nil {
		defaultJobSpec(js)
	}
}
