package table

import (
	"fmt"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// batch is the tables of the batch group (batch/v1).
var batch = map[string]def{
	"Job":     kindDef(jobColumns, jobCells),
	"CronJob": kindDef(cronJobColumns, cronJobCells),
}

var jobColumns = append([]Column{
	nameColumn,
	{Name: "Status", Type: "string", Description: "Complete, Failed, Terminating, Suspended or Running."},
	{Name: "Completions", Type: "string", Description: "Successful pods out of the completions wanted."},
	{Name: "Duration", Type: "string", Description: "How long the Job ran (from its start to its completion, or until now)."},
	ageColumn,
}, templateColumns...)

func jobCells(j *v1.Job, now time.Time) []any {
	return append([]any{
		j.Metadata.GetName(),
		JobStatus(j),
		JobCompletions(j.GetSpec(), j.GetStatus()),
		jobDuration(j.GetStatus(), now),
		Age(j.Metadata.GetCreationTimestamp(), now),
	}, templateCells(j.GetSpec().GetTemplate(), j.GetSpec().GetSelector())...)
}

// JobStatus is kubectl's STATUS of a Job.
func JobStatus(j *v1.Job) string {
	conds := j.GetStatus().GetConditions()
	switch {
	case ConditionStatus(conds, "Complete") == "True":
		return "Complete"
	case ConditionStatus(conds, "Failed") == "True":
		return "Failed"
	case j.GetMetadata().GetDeletionTimestamp() != nil:
		return "Terminating"
	case ConditionStatus(conds, "Suspended") == "True":
		return "Suspended"
	}
	return "Running"
}

// JobCompletions is kubectl's COMPLETIONS: "2/3", or for a Job without
// completions "0/1" ("0/1 of 4" with parallelism 4).
func JobCompletions(s *v1.JobSpec, st *v1.JobStatus) string {
	if s.GetCompletions() != 0 || (s != nil && s.Completions != nil) {
		return fmt.Sprintf("%d/%d", st.GetSucceeded(), s.GetCompletions())
	}
	if p := s.GetParallelism(); p > 1 {
		return fmt.Sprintf("%d/1 of %d", st.GetSucceeded(), p)
	}
	return fmt.Sprintf("%d/1", st.GetSucceeded())
}

func jobDuration(st *v1.JobStatus, now time.Time) string {
	switch {
	case st.GetStartTime() == nil:
		return ""
	case st.GetCompletionTime() == nil:
		return HumanDuration(now.Sub(st.GetStartTime().AsTime()))
	}
	return HumanDuration(st.GetCompletionTime().AsTime().Sub(st.GetStartTime().AsTime()))
}

var cronJobColumns = append([]Column{
	nameColumn,
	{Name: "Schedule", Type: "string", Description: "The cron schedule of its Jobs."},
	{Name: "Timezone", Type: "string", Description: "The time zone the schedule is read in (<none>: the controller-manager's)."},
	{Name: "Suspend", Type: "string", Description: "Whether new Jobs are held back."},
	{Name: "Active", Type: "integer", Description: "Jobs running now."},
	{Name: "Last Schedule", Type: "string", Description: "Time since a Job was last scheduled."},
	ageColumn,
}, templateColumns...)

func cronJobCells(c *v1.CronJob, now time.Time) []any {
	sp, st := c.GetSpec(), c.GetStatus()
	last := "<none>"
	if st.GetLastScheduleTime() != nil {
		last = Age(st.GetLastScheduleTime(), now)
	}
	return append([]any{
		c.Metadata.GetName(),
		sp.GetSchedule(),
		OrNone(sp.GetTimeZone()),
		fmt.Sprint(sp.GetSuspend()),
		int64(len(st.GetActive())),
		last,
		Age(c.Metadata.GetCreationTimestamp(), now),
	}, templateCells(sp.GetJobTemplate().GetSpec().GetTemplate(), sp.GetJobTemplate().GetSpec().GetSelector())...)
}
