package table

import (
	"fmt"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// apps is the tables of the apps group (apps/v1).
var apps = map[string]def{
	"Deployment": kindDef(deploymentColumns, deploymentCells),
	"ReplicaSet": kindDef(replicaSetColumns, replicaSetCells),
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
