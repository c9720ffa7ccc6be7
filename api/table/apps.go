package table

import (
	"fmt"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// apps is the tables of the apps group (apps/v1).
var apps = map[string]def{
	"Deployment":         kindDef(deploymentColumns, deploymentCells),
	"ReplicaSet":         kindDef(replicaSetColumns, replicaSetCells),
	"DaemonSet":          kindDef(daemonSetColumns, daemonSetCells),
	"StatefulSet":        kindDef(statefulSetColumns, statefulSetCells),
	"ControllerRevision": kindDef(controllerRevisionColumns, controllerRevisionCells),
}

// templateColumns are the wide columns of the kinds with a pod template.
var templateColumns = []Column{
	{Name: "Containers", Type: "string", Priority: 1, Description: "The names of the pod template's containers."},
	{Name: "Images", Type: "string", Priority: 1, Description: "The images of the pod template's containers."},
	{Name: "Selector", Type: "string", Priority: 1, Description: "The label selector of the pods it manages."},
}

var deploymentColumns = append([]Column{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Ready replicas out of the desired ones."},
	{Name: "Up-to-date", Type: "integer", Description: "Replicas running the current pod template."},
	{Name: "Available", Type: "integer", Description: "Replicas ready for at least minReadySeconds."},
	ageColumn,
}, templateColumns...)

func deploymentCells(d *v1.Deployment, now time.Time) []any {
	st := d.GetStatus()
	return append([]any{
		d.Metadata.GetName(),
		fmt.Sprintf("%d/%d", st.GetReadyReplicas(), d.GetSpec().GetReplicas()),
		int64(st.GetUpdatedReplicas()),
		int64(st.GetAvailableReplicas()),
		Age(d.Metadata.GetCreationTimestamp(), now),
	}, templateCells(d.GetSpec().GetTemplate(), d.GetSpec().GetSelector())...)
}

var replicaSetColumns = append([]Column{
	nameColumn,
	{Name: "Desired", Type: "integer", Description: "The replicas wanted (spec.replicas)."},
	{Name: "Current", Type: "integer", Description: "The replicas that exist."},
	{Name: "Ready", Type: "integer", Description: "The replicas that are ready."},
	ageColumn,
}, templateColumns...)

func replicaSetCells(r *v1.ReplicaSet, now time.Time) []any {
	st := r.GetStatus()
	return append([]any{
		r.Metadata.GetName(),
		int64(r.GetSpec().GetReplicas()),
		int64(st.GetReplicas()),
		int64(st.GetReadyReplicas()),
		Age(r.Metadata.GetCreationTimestamp(), now),
	}, templateCells(r.GetSpec().GetTemplate(), r.GetSpec().GetSelector())...)
}

// templateCells are the CONTAINERS IMAGES SELECTOR cells.
func templateCells(t *v1.PodTemplateSpec, sel *v1.LabelSelector) []any {
	var names, images []string
	for _, c := range t.GetSpec().GetContainers() {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return []any{OrNone(strings.Join(names, ",")), OrNone(strings.Join(images, ",")), SelectorString(sel)}
}

var daemonSetColumns = append([]Column{
	nameColumn,
	{Name: "Desired", Type: "integer", Description: "Nodes that should run the daemon pod."},
	{Name: "Current", Type: "integer", Description: "Nodes running it."},
	{Name: "Ready", Type: "integer", Description: "Nodes whose daemon pod is ready."},
	{Name: "Up-to-date", Type: "integer", Description: "Nodes running the current pod template."},
	{Name: "Available", Type: "integer", Description: "Nodes whose daemon pod is available (ready for minReadySeconds)."},
	{Name: "Node Selector", Type: "string", Description: "The pod template's nodeSelector."},
	ageColumn,
}, templateColumns...)

func daemonSetCells(d *v1.DaemonSet, now time.Time) []any {
	st := d.GetStatus()
	return append([]any{
		d.Metadata.GetName(),
		int64(st.GetDesiredNumberScheduled()),
		int64(st.GetCurrentNumberScheduled()),
		int64(st.GetNumberReady()),
		int64(st.GetUpdatedNumberScheduled()),
		int64(st.GetNumberAvailable()),
		LabelString(d.GetSpec().GetTemplate().GetSpec().GetNodeSelector()),
		Age(d.Metadata.GetCreationTimestamp(), now),
	}, templateCells(d.GetSpec().GetTemplate(), d.GetSpec().GetSelector())...)
}

var controllerRevisionColumns = []Column{
	nameColumn,
	{Name: "Controller", Type: "string", Description: "The object the revision belongs to (kind/name)."},
	{Name: "Revision", Type: "integer", Description: "The revision number."},
	ageColumn,
}

func controllerRevisionCells(r *v1.ControllerRevision, now time.Time) []any {
	owner := "<none>"
	for _, ref := range r.Metadata.GetOwnerReferences() {
		if ref.Controller {
			owner = strings.ToLower(ref.Kind) + ".apps/" + ref.Name
		}
	}
	return []any{r.Metadata.GetName(), owner, r.GetRevision(), Age(r.Metadata.GetCreationTimestamp(), now)}
}

var statefulSetColumns = append([]Column{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Ready replicas out of the desired ones."},
	ageColumn,
}, templateColumns[:2]...)

func statefulSetCells(s *v1.StatefulSet, now time.Time) []any {
	cells := templateCells(s.GetSpec().GetTemplate(), nil)
	return append([]any{s.Metadata.GetName(), fmt.Sprintf("%d/%d", s.GetStatus().GetReadyReplicas(), s.GetSpec().GetReplicas()),
		Age(s.Metadata.GetCreationTimestamp(), now)}, cells[:2]...)
}
