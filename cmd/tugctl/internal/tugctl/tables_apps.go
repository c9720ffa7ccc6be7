package tugctl

import (
	"fmt"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// deploymentRow: NAME READY UP-TO-DATE AVAILABLE AGE, READY being
// ready/desired.
func deploymentRow(d *v1.Deployment, now time.Time) ([]string, []string) {
	st := d.GetStatus()
	return []string{
			d.Metadata.GetName(),
			fmt.Sprintf("%d/%d", st.GetReadyReplicas(), d.GetSpec().GetReplicas()),
			fmt.Sprint(st.GetUpdatedReplicas()),
			fmt.Sprint(st.GetAvailableReplicas()),
			age(d.Metadata.GetCreationTimestamp(), now),
		},
		templateColumns(d.GetSpec().GetTemplate(), d.GetSpec().GetSelector())
}

// replicaSetRow: NAME DESIRED CURRENT READY AGE.
func replicaSetRow(r *v1.ReplicaSet, now time.Time) ([]string, []string) {
	st := r.GetStatus()
	return []string{
			r.Metadata.GetName(),
			fmt.Sprint(r.GetSpec().GetReplicas()),
			fmt.Sprint(st.GetReplicas()),
			fmt.Sprint(st.GetReadyReplicas()),
			age(r.Metadata.GetCreationTimestamp(), now),
		},
		templateColumns(r.GetSpec().GetTemplate(), r.GetSpec().GetSelector())
}

// templateColumns are the wide CONTAINERS IMAGES SELECTOR cells.
func templateColumns(t *v1.PodTemplateSpec, sel *v1.LabelSelector) []string {
	var names, images []string
	for _, c := range t.GetSpec().GetContainers() {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return []string{orNone(strings.Join(names, ",")), orNone(strings.Join(images, ",")), selectorString(sel)}
}

// selectorString is a label selector as a selector string, or "<none>".
func selectorString(sel *v1.LabelSelector) string {
	if sel == nil {
		return "<none>"
	}
	s, err := labels.FromLabelSelector(sel)
	if err != nil {
		return "<invalid>"
	}
	return orNone(s.String())
}
