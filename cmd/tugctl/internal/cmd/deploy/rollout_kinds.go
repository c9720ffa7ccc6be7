package deploy

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
)

// The rollout commands work on Deployments (revisions are their
// ReplicaSets), DaemonSets and StatefulSets (revisions are their
// ControllerRevisions), as kubectl's history viewers and rollbackers do.
var rolloutKinds = []string{"Deployment", "DaemonSet", "StatefulSet"}

// podRevision is one revision of a workload's pod template.
type podRevision struct {
	number      int64
	annotations map[string]string
	template    *v1.PodTemplateSpec // as the workload's spec.template would hold it
	shown       *v1.PodTemplateSpec // what history --revision shows (a replica set's, with its hash label)
}

// revisions lists a workload's revisions, oldest first.
func revisions(ctx context.Context, c *client.Client, obj v1.Object) ([]podRevision, error) {
	var out []podRevision
	switch o := obj.(type) {
	case *v1.Deployment:
		rss, err := revision.ReplicaSets(ctx, c, o)
		if err != nil {
			return nil, err
		}
		for _, rs := range rss {
			if n := revision.Of(rs); n > 0 {
				out = append(out, podRevision{n, rs.GetMetadata().GetAnnotations(), revision.TemplateWithoutHash(rs.GetSpec().GetTemplate()), rs.GetSpec().GetTemplate()})
			}
		}
		return out, nil
	case *v1.DaemonSet, *v1.StatefulSet:
		all, _, err := client.For[*v1.ControllerRevision](c).List(ctx, client.ListOptions{Namespace: obj.GetMetadata().GetNamespace()})
		if err != nil {
			return nil, err
		}
		for _, r := range all {
			if !revision.OwnedBy(r.GetMetadata(), obj.GetMetadata().GetUid()) {
				continue
			}
			t, err := manifest.RevisionTemplate(r.GetData())
			if err != nil {
				return nil, fmt.Errorf("controllerrevision %s: %w", r.GetMetadata().GetName(), err)
			}
			out = append(out, podRevision{r.GetRevision(), r.GetMetadata().GetAnnotations(), t, t})
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].number < out[j].number })
		return out, nil
	}
	return nil, fmt.Errorf("%T has no rollout history", obj)
}

// templateField is spec.template of a workload.
func templateField(obj v1.Object) (protoreflect.Message, protoreflect.FieldDescriptor) {
	spec := obj.ProtoReflect().Mutable(v1.Field(obj, "spec")).Message()
	return spec, spec.Descriptor().Fields().ByName("template")
}

// podTemplate is a workload's spec.template (nil if unset).
func podTemplate(obj v1.Object) *v1.PodTemplateSpec {
	spec, fd := templateField(obj)
	if !spec.Has(fd) {
		return nil
	}
	return spec.Get(fd).Message().Interface().(*v1.PodTemplateSpec)
}

// setPodTemplate replaces a workload's spec.template with a copy of t.
func setPodTemplate(obj v1.Object, t *v1.PodTemplateSpec) {
	spec, fd := templateField(obj)
	spec.Set(fd, protoreflect.ValueOfMessage(proto.Clone(t).ProtoReflect()))
}

// workloadStatus is kubectl's status viewer of each kind: a progress
// message, whether the rollout is done, or an error once it has failed.
func workloadStatus(obj v1.Object, wantRevision int64) (string, bool, error) {
	switch o := obj.(type) {
	case *v1.Deployment:
		return deploymentStatus(o, wantRevision)
	case *v1.DaemonSet:
		if wantRevision > 0 {
			return "", false, fmt.Errorf("--revision is only supported for deployments")
		}
		return daemonSetStatus(o)
	case *v1.StatefulSet:
		if wantRevision > 0 {
			return "", false, fmt.Errorf("--revision is only supported for deployments")
		}
		return statefulSetStatus(o)
	}
	return "", false, fmt.Errorf("%T has no rollout status", obj)
}

// daemonSetStatus is kubectl's DaemonSetStatusViewer.
func daemonSetStatus(d *v1.DaemonSet) (string, bool, error) {
	if t := d.GetSpec().GetUpdateStrategy().GetType(); t != "" && t != "RollingUpdate" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	name, st := d.GetMetadata().GetName(), d.GetStatus()
	if d.GetMetadata().GetGeneration() > st.GetObservedGeneration() {
		return "Waiting for daemon set spec update to be observed...\n", false, nil
	}
	if st.GetUpdatedNumberScheduled() < st.GetDesiredNumberScheduled() {
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...\n", name, st.GetUpdatedNumberScheduled(), st.GetDesiredNumberScheduled()), false, nil
	}
	if st.GetNumberAvailable() < st.GetDesiredNumberScheduled() {
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...\n", name, st.GetNumberAvailable(), st.GetDesiredNumberScheduled()), false, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out\n", name), true, nil
}

// statefulSetStatus is kubectl's StatefulSetStatusViewer.
func statefulSetStatus(s *v1.StatefulSet) (string, bool, error) {
	strategy := s.GetSpec().GetUpdateStrategy()
	if t := strategy.GetType(); t != "" && t != "RollingUpdate" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	st := s.GetStatus()
	if st.GetObservedGeneration() == 0 || s.GetMetadata().GetGeneration() > st.GetObservedGeneration() {
		return "Waiting for statefulset spec update to be observed...\n", false, nil
	}
	replicas := s.GetSpec().GetReplicas()
	if s.GetSpec().Replicas != nil && st.GetReadyReplicas() < replicas {
		return fmt.Sprintf("Waiting for %d pods to be ready...\n", replicas-st.GetReadyReplicas()), false, nil
	}
	if p := strategy.GetRollingUpdate().GetPartition(); s.GetSpec().Replicas != nil && p > 0 {
		if st.GetUpdatedReplicas() < replicas-p {
			return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...\n", st.GetUpdatedReplicas(), replicas-p), false, nil
		}
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.GetUpdatedReplicas()), true, nil
	}
	if st.GetUpdateRevision() != st.GetCurrentRevision() {
		return fmt.Sprintf("waiting for statefulset rolling update to complete %d pods at revision %s...\n", st.GetUpdatedReplicas(), st.GetUpdateRevision()), false, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", st.GetCurrentReplicas(), st.GetCurrentRevision()), true, nil
}
