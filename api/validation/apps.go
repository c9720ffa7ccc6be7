// The apps group (apps/v1): ReplicaSet and Deployment.

package validation

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/labels"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// replicated is the spec an apps/v1 workload shares: the Deployment's and
// the ReplicaSet's replicas, minReadySeconds, selector and pod template.
type replicated interface {
	GetReplicas() int32
	GetMinReadySeconds() int32
	GetSelector() *v1.LabelSelector
	GetTemplate() *v1.PodTemplateSpec
}

// replicatedSpec validates the metadata and the shared spec fields of an
// apps/v1 workload; it reports whether there is a spec to check further.
func replicatedSpec(errs *Errs, m *v1.ObjectMeta, s replicated, hasSpec bool) bool {
	ObjectMeta(errs, m, true, DNSSubdomain)
	if !hasSpec {
		errs.Add("spec", "required")
		return false
	}
	if s.GetReplicas() < 0 {
		errs.Add("spec.replicas", "must be >= 0")
	}
	if s.GetReplicas() > MaxReplicas {
		errs.Add("spec.replicas", "%d is more than the limit of %d", s.GetReplicas(), MaxReplicas)
	}
	if s.GetMinReadySeconds() < 0 {
		errs.Add("spec.minReadySeconds", "must be >= 0")
	}
	selectorMatchesTemplate(errs, s.GetSelector(), s.GetTemplate())
	PodTemplate(errs, "spec.template", s.GetTemplate())
	return true
}

// ReplicaSet validates a replica set.
func ReplicaSet(r *v1.ReplicaSet) Errs {
	var errs Errs
	replicatedSpec(&errs, r.Metadata, r.Spec, r.Spec != nil)
	return errs
}

// Deployment validates a deployment.
func Deployment(d *v1.Deployment) Errs {
	var errs Errs
	s := d.Spec
	if !replicatedSpec(&errs, d.Metadata, s, s != nil) {
		return errs
	}
	if st := s.Strategy; st != nil {
		OneOf(&errs, "spec.strategy.type", st.Type, "RollingUpdate", "Recreate")
		if ru := st.RollingUpdate; ru != nil {
			if st.Type == "Recreate" {
				errs.Add("spec.strategy.rollingUpdate", "must be empty when type is Recreate")
			}
			IntOrPercent(&errs, "spec.strategy.rollingUpdate.maxSurge", ru.MaxSurge, false)
			IntOrPercent(&errs, "spec.strategy.rollingUpdate.maxUnavailable", ru.MaxUnavailable, true)
			if isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) {
				errs.Add("spec.strategy.rollingUpdate.maxUnavailable", "may not be 0 when maxSurge is 0")
			}
		}
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 0 {
		errs.Add("spec.revisionHistoryLimit", "must be >= 0")
	}
	if s.ProgressDeadlineSeconds != nil && *s.ProgressDeadlineSeconds <= s.MinReadySeconds {
		errs.Add("spec.progressDeadlineSeconds", "must be greater than minReadySeconds")
	}
	return errs
}

func isZero(v string) bool { return v == "0" || v == "0%" }

// ReplicaSetUpdate checks what may not change in a replica set (old is
// stored): the selector.
func ReplicaSetUpdate(old, new *v1.ReplicaSet) Errs {
	var errs Errs
	selectorUnchanged(&errs, old.GetSpec().GetSelector(), new.GetSpec().GetSelector())
	return errs
}

// DeploymentUpdate checks what may not change in a deployment (old is
// stored): the selector.
func DeploymentUpdate(old, new *v1.Deployment) Errs {
	var errs Errs
	selectorUnchanged(&errs, old.GetSpec().GetSelector(), new.GetSpec().GetSelector())
	return errs
}

// selectorUnchanged refuses a change of an apps/v1 selector, which is
// immutable (pods would be orphaned or adopted behind the user's back).
func selectorUnchanged(errs *Errs, old, new *v1.LabelSelector) {
	if !proto.Equal(old, new) {
		errs.Add("spec.selector", "field is immutable")
	}
}

func selectorMatchesTemplate(errs *Errs, sel *v1.LabelSelector, t *v1.PodTemplateSpec) {
	LabelSelector(errs, "spec.selector", sel)
	s, err := labels.FromLabelSelector(sel)
	if err != nil || sel == nil {
		return
	}
	if !s.Matches(t.GetMetadata().GetLabels()) {
		errs.Add("spec.template.metadata.labels", "selector %q does not match the template's labels", s.String())
	}
}

// DaemonSet validates a daemon set.
func DaemonSet(d *v1.DaemonSet) Errs {
	var errs Errs
	ObjectMeta(&errs, d.Metadata, true, DNSSubdomain)
	s := d.Spec
	if s == nil {
		errs.Add("spec", "required")
		return errs
	}
	if s.MinReadySeconds < 0 {
		errs.Add("spec.minReadySeconds", "must be >= 0")
	}
	selectorMatchesTemplate(&errs, s.Selector, s.Template)
	PodTemplate(&errs, "spec.template", s.Template)
	if st := s.UpdateStrategy; st != nil {
		OneOf(&errs, "spec.updateStrategy.type", st.Type, "RollingUpdate", "OnDelete")
		if ru := st.RollingUpdate; ru != nil {
			if st.Type == "OnDelete" {
				errs.Add("spec.updateStrategy.rollingUpdate", "must be empty when type is OnDelete")
			}
			IntOrPercent(&errs, "spec.updateStrategy.rollingUpdate.maxUnavailable", ru.MaxUnavailable, true)
			IntOrPercent(&errs, "spec.updateStrategy.rollingUpdate.maxSurge", ru.MaxSurge, true)
			if isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) {
				errs.Add("spec.updateStrategy.rollingUpdate.maxUnavailable", "may not be 0 when maxSurge is 0")
			}
		}
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 0 {
		errs.Add("spec.revisionHistoryLimit", "must be >= 0")
	}
	return errs
}

// DaemonSetUpdate checks what may not change in a daemon set: the selector.
func DaemonSetUpdate(old, new *v1.DaemonSet) Errs {
	var errs Errs
	selectorUnchanged(&errs, old.GetSpec().GetSelector(), new.GetSpec().GetSelector())
	return errs
}

// ControllerRevision validates a controller revision as Kubernetes does:
// data (any JSON object) is required, revision is not negative.
func ControllerRevision(r *v1.ControllerRevision) Errs {
	var errs Errs
	ObjectMeta(&errs, r.Metadata, true, DNSSubdomain)
	if r.Data == nil {
		errs.Add("data", "Required value: data is mandatory")
	}
	if r.Revision < 0 {
		errs.Add("revision", "must be greater than or equal to 0")
	}
	return errs
}

// ControllerRevisionUpdate keeps a revision's data fixed (only its
// revision number changes, when an old revision is rolled back to).
func ControllerRevisionUpdate(old, new *v1.ControllerRevision) Errs {
	var errs Errs
	if !proto.Equal(old.GetData(), new.GetData()) {
		errs.Add("data", "field is immutable")
	}
	return errs
}

// StatefulSet validates a stateful set.
func StatefulSet(ss *v1.StatefulSet) Errs {
	var errs Errs
	s := ss.Spec
	if s != nil && s.Template.GetSpec() != nil && len(s.VolumeClaimTemplates) > 0 {
		// The template's containers may mount the claims' volumes: check
		// it with them, as the controller makes its pods.
		s = proto.Clone(s).(*v1.StatefulSetSpec)
		for _, c := range s.VolumeClaimTemplates {
			name := c.GetMetadata().GetName()
			have := false
			for _, v := range s.Template.Spec.Volumes {
				have = have || v.Name == name
			}
			if !have && name != "" {
				s.Template.Spec.Volumes = append(s.Template.Spec.Volumes, &v1.Volume{Name: name,
					PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}})
			}
		}
	}
	if !replicatedSpec(&errs, ss.Metadata, s, s != nil) {
		return errs
	}
	if s.ServiceName == "" {
		errs.Add("spec.serviceName", "required: the headless Service that gives the pods their DNS names")
	} else {
		DNSLabel(&errs, "spec.serviceName", s.ServiceName)
	}
	OneOf(&errs, "spec.podManagementPolicy", s.PodManagementPolicy, "OrderedReady", "Parallel")
	if st := s.UpdateStrategy; st != nil {
		OneOf(&errs, "spec.updateStrategy.type", st.Type, "RollingUpdate", "OnDelete")
		if ru := st.RollingUpdate; ru != nil {
			if st.Type == "OnDelete" {
				errs.Add("spec.updateStrategy.rollingUpdate", "only allowed for updateStrategy type RollingUpdate")
			}
			if ru.Partition != nil && *ru.Partition < 0 {
				errs.Add("spec.updateStrategy.rollingUpdate.partition", "must be greater than or equal to 0")
			}
			if ru.MaxUnavailable != "" {
				errs.Add("spec.updateStrategy.rollingUpdate.maxUnavailable", "not supported (Kubernetes' alpha MaxUnavailableStatefulSet)")
			}
		}
	}
	if s.RevisionHistoryLimit != nil && *s.RevisionHistoryLimit < 0 {
		errs.Add("spec.revisionHistoryLimit", "must be >= 0")
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p != nil {
		OneOf(&errs, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", p.WhenDeleted, "Retain", "Delete")
		OneOf(&errs, "spec.persistentVolumeClaimRetentionPolicy.whenScaled", p.WhenScaled, "Retain", "Delete")
	}
	names := map[string]bool{}
	for i, c := range s.VolumeClaimTemplates {
		cp := fmt.Sprintf("spec.volumeClaimTemplates[%d]", i)
		if c.GetMetadata().GetName() == "" {
			errs.Add(cp+".metadata.name", "required")
			continue
		}
		DNSLabel(&errs, cp+".metadata.name", c.Metadata.Name)
		if names[c.Metadata.Name] {
			errs.Add(cp+".metadata.name", "%q is duplicated", c.Metadata.Name)
		}
		names[c.Metadata.Name] = true
		tmp := &v1.PersistentVolumeClaim{Metadata: &v1.ObjectMeta{Name: c.Metadata.Name, Namespace: "default"}, Spec: c.Spec}
		for _, e := range PersistentVolumeClaim(tmp) {
			if p := strings.TrimPrefix(e.Path, "metadata.namespace"); p == e.Path {
				errs.Add(cp+"."+e.Path, "%s", e.Msg)
			}
		}
	}
	return errs
}

// StatefulSetUpdate checks what may not change in a stateful set: all of
// the spec but replicas, template, updateStrategy, minReadySeconds,
// revisionHistoryLimit and persistentVolumeClaimRetentionPolicy (as Kubernetes).
func StatefulSetUpdate(old, new *v1.StatefulSet) Errs {
	var errs Errs
	a, b := proto.Clone(old.GetSpec()).(*v1.StatefulSetSpec), proto.Clone(new.GetSpec()).(*v1.StatefulSetSpec)
	for _, s := range []*v1.StatefulSetSpec{a, b} {
		s.Replicas, s.Template, s.UpdateStrategy, s.MinReadySeconds, s.RevisionHistoryLimit, s.PersistentVolumeClaimRetentionPolicy = nil, nil, nil, 0, nil, nil
	}
	if !proto.Equal(a, b) {
		errs.Add("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
	}
	return errs
}
