package describe

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
)

func describeDeployment(ctx context.Context, d *describer, dep *v1.Deployment) error {
	sp, st := dep.GetSpec(), dep.GetStatus()
	d.meta(dep.GetMetadata(), true)
	d.kv(0, "Selector", table.SelectorString(sp.GetSelector()))
	d.kv(0, "Replicas", fmt.Sprintf("%d desired | %d updated | %d total | %d available | %d unavailable",
		sp.GetReplicas(), st.GetUpdatedReplicas(), st.GetReplicas(), st.GetAvailableReplicas(), st.GetUnavailableReplicas()))
	d.kv(0, "StrategyType", sp.GetStrategy().GetType())
	d.kv(0, "MinReadySeconds", sp.GetMinReadySeconds())
	if ru := sp.GetStrategy().GetRollingUpdate(); ru != nil && sp.GetStrategy().GetType() == "RollingUpdate" {
		d.kv(0, "RollingUpdateStrategy", fmt.Sprintf("%s max unavailable, %s max surge", ru.MaxUnavailable, ru.MaxSurge))
	}
	if sp.GetPaused() {
		d.kv(0, "Paused", "true")
	}
	d.text(0, "Pod Template:")
	d.podTemplate(1, sp.GetTemplate())
	d.conditions(st.GetConditions(), true)
	rss, err := revision.ReplicaSets(ctx, d.c, dep)
	if err != nil {
		return err
	}
	newRS := revision.FindNew(dep, rss)
	var old []string
	for _, rs := range rss {
		if rs != newRS && (rs.GetSpec().GetReplicas() > 0 || rs.GetStatus().GetReplicas() > 0) {
			old = append(old, rsSummary(rs))
		}
	}
	d.kv(0, "OldReplicaSets", table.OrNone(strings.Join(old, ", ")))
	if newRS != nil {
		d.kv(0, "NewReplicaSet", rsSummary(newRS))
	} else {
		d.kv(0, "NewReplicaSet", "<none>")
	}
	return d.events(ctx, dep)
}

// rsSummary is "nginx-7c5ddbdf54 (3/3 replicas created)".
func rsSummary(rs *v1.ReplicaSet) string {
	return fmt.Sprintf("%s (%d/%d replicas created)", rs.Metadata.GetName(), rs.GetStatus().GetReplicas(), rs.GetSpec().GetReplicas())
}

func describeReplicaSet(ctx context.Context, d *describer, rs *v1.ReplicaSet) error {
	m, sp, st := rs.GetMetadata(), rs.GetSpec(), rs.GetStatus()
	d.kv(0, "Name", m.GetName())
	d.kv(0, "Namespace", m.GetNamespace())
	d.kv(0, "Selector", table.SelectorString(sp.GetSelector()))
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	d.controlledBy(m)
	d.kv(0, "Replicas", fmt.Sprintf("%d current / %d desired", st.GetReplicas(), sp.GetReplicas()))
	if err := d.podsStatus(ctx, m, sp.GetSelector()); err != nil {
		return err
	}
	d.text(0, "Pod Template:")
	d.podTemplate(1, sp.GetTemplate())
	d.conditions(st.GetConditions(), true)
	return d.events(ctx, rs)
}

// podTemplate writes a template's labels, annotations and containers.
func (d *describer) podTemplate(level int, t *v1.PodTemplateSpec) {
	d.mapLines(level, "Labels", t.GetMetadata().GetLabels(), "=")
	if len(t.GetMetadata().GetAnnotations()) > 0 {
		d.mapLines(level, "Annotations", t.GetMetadata().GetAnnotations(), ": ")
	}
	d.text(level, "Containers:")
	for _, c := range t.GetSpec().GetContainers() {
		d.text(level+1, "%s:", c.Name)
		d.kv(level+2, "Image", c.Image)
		var ports []string
		for _, p := range c.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.ContainerPort, cmp.Or(p.Protocol, "TCP")))
		}
		d.kv(level+2, "Port", table.OrNone(strings.Join(ports, ", ")))
		d.resourceLists(level+2, c.GetResources().GetLimits(), c.GetResources().GetRequests())
		for _, pr := range []struct {
			name  string
			probe *v1.Probe
		}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
			if pr.probe != nil {
				d.kv(level+2, pr.name, probeString(pr.probe))
			}
		}
		env := "<none>"
		if len(c.Env) > 0 {
			var parts []string
			for _, e := range c.Env {
				parts = append(parts, e.Name+"="+e.Value)
			}
			env = strings.Join(parts, " ")
		}
		d.kv(level+2, "Environment", env)
	}
	if len(t.GetSpec().GetVolumes()) > 0 {
		var names []string
		for _, v := range t.GetSpec().GetVolumes() {
			names = append(names, v.Name)
		}
		d.kv(level, "Volumes", strings.Join(names, ", "))
	}
}

func describeDaemonSet(ctx context.Context, d *describer, ds *v1.DaemonSet) error {
	m, sp, st := ds.GetMetadata(), ds.GetSpec(), ds.GetStatus()
	d.kv(0, "Name", m.GetName())
	d.kv(0, "Namespace", m.GetNamespace())
	d.kv(0, "Selector", table.SelectorString(sp.GetSelector()))
	d.kv(0, "Node-Selector", table.LabelString(sp.GetTemplate().GetSpec().GetNodeSelector()))
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	d.kv(0, "Desired Number of Nodes Scheduled", st.GetDesiredNumberScheduled())
	d.kv(0, "Current Number of Nodes Scheduled", st.GetCurrentNumberScheduled())
	d.kv(0, "Number of Nodes Scheduled with Up-to-date Pods", st.GetUpdatedNumberScheduled())
	d.kv(0, "Number of Nodes Scheduled with Available Pods", st.GetNumberAvailable())
	d.kv(0, "Number of Nodes Misscheduled", st.GetNumberMisscheduled())
	if err := d.podsStatus(ctx, m, sp.GetSelector()); err != nil {
		return err
	}
	d.kv(0, "Update Strategy", sp.GetUpdateStrategy().GetType())
	if ru := sp.GetUpdateStrategy().GetRollingUpdate(); ru != nil {
		d.kv(0, "RollingUpdateStrategy", fmt.Sprintf("%s max unavailable, %s max surge", ru.MaxUnavailable, ru.MaxSurge))
	}
	d.text(0, "Pod Template:")
	d.podTemplate(1, sp.GetTemplate())
	d.conditions(st.GetConditions(), true)
	return d.events(ctx, ds)
}

// podsStatus writes "Pods Status: 3 Running / 0 Waiting / 0 Succeeded /
// 0 Failed" for the pods an owner controls.
func (d *describer) podsStatus(ctx context.Context, owner *v1.ObjectMeta, selector *v1.LabelSelector) error {
	sel := table.SelectorString(selector)
	var running, waiting, succeeded, failed int
	if sel != "<none>" && sel != "<invalid>" {
		pods, _, err := client.For[*v1.Pod](d.c).List(ctx, client.ListOptions{Namespace: owner.GetNamespace(), LabelSelector: sel})
		if err != nil {
			return err
		}
		for _, p := range pods {
			if !revision.OwnedBy(p.GetMetadata(), owner.GetUid()) {
				continue
			}
			switch p.GetStatus().GetPhase() {
			case "Running":
				running++
			case "Pending":
				waiting++
			case "Succeeded":
				succeeded++
			case "Failed":
				failed++
			}
		}
	}
	d.kv(0, "Pods Status", fmt.Sprintf("%d Running / %d Waiting / %d Succeeded / %d Failed", running, waiting, succeeded, failed))
	return nil
}

func describeStatefulSet(ctx context.Context, d *describer, ss *v1.StatefulSet) error {
	m, sp, st := ss.GetMetadata(), ss.GetSpec(), ss.GetStatus()
	d.meta(m, true)
	d.kv(0, "Selector", table.SelectorString(sp.GetSelector()))
	d.kv(0, "Replicas", fmt.Sprintf("%d desired | %d total", sp.GetReplicas(), st.GetReplicas()))
	d.kv(0, "Update Strategy", sp.GetUpdateStrategy().GetType())
	if ru := sp.GetUpdateStrategy().GetRollingUpdate(); ru != nil {
		d.kv(1, "Partition", ru.GetPartition())
	}
	d.kv(0, "Pod Management Policy", sp.GetPodManagementPolicy())
	d.kv(0, "Service Name", sp.GetServiceName())
	if err := d.podsStatus(ctx, m, sp.GetSelector()); err != nil {
		return err
	}
	d.text(0, "Pod Template:")
	d.podTemplate(1, sp.GetTemplate())
	d.text(0, "Volume Claims:")
	if len(sp.GetVolumeClaimTemplates()) == 0 {
		d.text(1, "<none>")
	}
	for _, c := range sp.GetVolumeClaimTemplates() {
		d.kv(1, "Name", c.GetMetadata().GetName())
		d.kv(1, "StorageClass", c.GetSpec().GetStorageClassName())
		d.kv(1, "Capacity", c.GetSpec().GetResources().GetRequests()["storage"])
		d.kv(1, "Access Modes", table.AccessModes(c.GetSpec().GetAccessModes()))
	}
	if p := sp.GetPersistentVolumeClaimRetentionPolicy(); p != nil {
		d.kv(0, "PVC Retention Policy", fmt.Sprintf("whenDeleted %s, whenScaled %s", p.GetWhenDeleted(), p.GetWhenScaled()))
	}
	d.conditions(st.GetConditions(), true)
	return d.events(ctx, ss)
}
