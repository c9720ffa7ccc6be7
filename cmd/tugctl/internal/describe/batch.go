package describe

import (
	"context"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func describeJob(ctx context.Context, d *describer, j *v1.Job) error {
	sp, st := j.GetSpec(), j.GetStatus()
	d.meta(j.GetMetadata(), true)
	d.controlledBy(j.GetMetadata())
	d.kv(0, "Selector", table.SelectorString(sp.GetSelector()))
	d.kv(0, "Parallelism", sp.GetParallelism())
	if sp.Completions != nil {
		d.kv(0, "Completions", sp.GetCompletions())
	} else {
		d.kv(0, "Completions", "<unset>")
	}
	d.kv(0, "Completion Mode", sp.GetCompletionMode())
	d.kv(0, "Suspend", sp.GetSuspend())
	d.kv(0, "Backoff Limit", sp.GetBackoffLimit())
	if sp.ActiveDeadlineSeconds != nil {
		d.kv(0, "Active Deadline Seconds", fmt.Sprintf("%ds", sp.GetActiveDeadlineSeconds()))
	}
	if sp.TtlSecondsAfterFinished != nil {
		d.kv(0, "TTL Seconds After Finished", sp.GetTtlSecondsAfterFinished())
	}
	if st.GetStartTime() != nil {
		d.kv(0, "Start Time", timeString(st.GetStartTime()))
	}
	if st.GetCompletionTime() != nil {
		d.kv(0, "Completed At", timeString(st.GetCompletionTime()))
		d.kv(0, "Duration", table.HumanDuration(st.GetCompletionTime().AsTime().Sub(st.GetStartTime().AsTime())))
	}
	d.kv(0, "Pods Statuses", fmt.Sprintf("%d Active (%d Ready) / %d Succeeded / %d Failed", st.GetActive(), st.GetReady(), st.GetSucceeded(), st.GetFailed()))
	if sp.GetCompletionMode() == "Indexed" {
		d.kv(0, "Completed Indexes", table.OrNone(st.GetCompletedIndexes()))
	}
	for i, r := range sp.GetPodFailurePolicy().GetRules() {
		key := ""
		if i == 0 {
			key = "Pod Failure Policy"
		}
		rule := r.Action + " on "
		if e := r.OnExitCodes; e != nil {
			rule += fmt.Sprintf("exit codes %s %v", e.Operator, e.Values)
			if e.ContainerName != "" {
				rule += " of container " + e.ContainerName
			}
		}
		for _, c := range r.OnPodConditions {
			rule += fmt.Sprintf("pod condition %s=%s ", c.Type, c.Status)
		}
		if key != "" {
			d.kv(0, key, rule)
		} else {
			d.text(0, "\t%s", rule)
		}
	}
	d.text(0, "Pod Template:")
	d.podTemplate(1, sp.GetTemplate())
	d.conditions(st.GetConditions(), true)
	return d.events(ctx, j)
}

func describeCronJob(ctx context.Context, d *describer, c *v1.CronJob) error {
	sp, st := c.GetSpec(), c.GetStatus()
	d.meta(c.GetMetadata(), true)
	d.kv(0, "Schedule", sp.GetSchedule())
	d.kv(0, "Time Zone", table.OrNone(sp.GetTimeZone()))
	d.kv(0, "Concurrency Policy", sp.GetConcurrencyPolicy())
	d.kv(0, "Suspend", sp.GetSuspend())
	d.kv(0, "Successful Job History Limit", sp.GetSuccessfulJobsHistoryLimit())
	d.kv(0, "Failed Job History Limit", sp.GetFailedJobsHistoryLimit())
	if sp.StartingDeadlineSeconds != nil {
		d.kv(0, "Starting Deadline Seconds", fmt.Sprintf("%ds", sp.GetStartingDeadlineSeconds()))
	} else {
		d.kv(0, "Starting Deadline Seconds", "<unset>")
	}
	js := sp.GetJobTemplate().GetSpec()
	d.kv(0, "Parallelism", js.GetParallelism())
	if js.Completions != nil {
		d.kv(0, "Completions", js.GetCompletions())
	} else {
		d.kv(0, "Completions", "<unset>")
	}
	d.text(0, "Pod Template:")
	d.podTemplate(1, js.GetTemplate())
	if st.GetLastScheduleTime() != nil {
		d.kv(0, "Last Schedule Time", timeString(st.GetLastScheduleTime()))
	} else {
		d.kv(0, "Last Schedule Time", "<unset>")
	}
	if st.GetLastSuccessfulTime() != nil {
		d.kv(0, "Last Successful Time", timeString(st.GetLastSuccessfulTime()))
	}
	var active []string
	for _, a := range st.GetActive() {
		active = append(active, a.GetName())
	}
	d.kv(0, "Active Jobs", table.OrNone(strings.Join(active, ", ")))
	return d.events(ctx, c)
}
