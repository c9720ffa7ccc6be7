// The apps group (apps/v1): its kinds and their defaults.

package kinds

import (
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// appsKinds is the apps group, apps/v1.
var appsKinds = []*Kind{
	{Name: "ReplicaSet", Plural: "replicasets", Short: []string{"rs"}, Categories: []string{"all"}, APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.ReplicaSet{} }, Default: typedDefault(defaultReplicaSet), Validate: typed(validation.ReplicaSet),
		ValidateUpdate: typedUpdate(validation.ReplicaSetUpdate), Scale: replicaScale},
	{Name: "Deployment", Plural: "deployments", Short: []string{"deploy"}, Categories: []string{"all"}, APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.Deployment{} }, Default: typedDefault(defaultDeployment), Validate: typed(validation.Deployment),
		ValidateUpdate: typedUpdate(validation.DeploymentUpdate), Scale: replicaScale},
	{Name: "DaemonSet", Plural: "daemonsets", Short: []string{"ds"}, APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.DaemonSet{} }, Default: typedDefault(defaultDaemonSet), Validate: typed(validation.DaemonSet),
		ValidateUpdate: typedUpdate(validation.DaemonSetUpdate)},
	{Name: "StatefulSet", Plural: "statefulsets", Short: []string{"sts"}, APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.StatefulSet{} }, Default: typedDefault(defaultStatefulSet), Validate: typed(validation.StatefulSet),
		ValidateUpdate: typedUpdate(validation.StatefulSetUpdate), Scale: replicaScale},
	{Name: "ControllerRevision", Plural: "controllerrevisions", APIVersion: "apps/v1", Namespaced: true,
		New: func() v1.Object { return &v1.ControllerRevision{} }, Default: noDefault, Validate: typed(validation.ControllerRevision),
		ValidateUpdate: typedUpdate(validation.ControllerRevisionUpdate)},
}

func defaultReplicaSet(r *v1.ReplicaSet) {
	if r.Spec == nil {
		return
	}
	if r.Spec.Replicas == nil {
		r.Spec.Replicas = proto.Int32(1)
	}
	defaultTemplate(r.Spec.Template)
}

func defaultDeployment(d *v1.Deployment) {
	s := d.Spec
	if s == nil {
		return
	}
	if s.Replicas == nil {
		s.Replicas = proto.Int32(1)
	}
	if s.Strategy == nil {
		s.Strategy = &v1.DeploymentStrategy{}
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = "RollingUpdate"
	}
	if s.Strategy.Type == "RollingUpdate" {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &v1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxSurge == "" {
			s.Strategy.RollingUpdate.MaxSurge = "25%"
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == "" {
			s.Strategy.RollingUpdate.MaxUnavailable = "25%"
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = proto.Int32(10)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = proto.Int32(600)
	}
	defaultTemplate(s.Template)
}

func defaultDaemonSet(d *v1.DaemonSet) {
	s := d.Spec
	if s == nil {
		return
	}
	if s.UpdateStrategy == nil {
		s.UpdateStrategy = &v1.DaemonSetUpdateStrategy{}
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = "RollingUpdate"
	}
	if s.UpdateStrategy.Type == "RollingUpdate" {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &v1.RollingUpdateDaemonSet{}
		}
		ru := s.UpdateStrategy.RollingUpdate
		if ru.MaxUnavailable == "" {
			ru.MaxUnavailable = "1"
		}
		if ru.MaxSurge == "" {
			ru.MaxSurge = "0"
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = proto.Int32(10)
	}
	defaultTemplate(s.Template)
}

func defaultStatefulSet(ss *v1.StatefulSet) {
	s := ss.Spec
	if s == nil {
		return
	}
	if s.Replicas == nil {
		s.Replicas = proto.Int32(1)
	}
	if s.PodManagementPolicy == "" {
		s.PodManagementPolicy = "OrderedReady"
	}
	if s.UpdateStrategy == nil {
		s.UpdateStrategy = &v1.StatefulSetUpdateStrategy{}
	}
	if s.UpdateStrategy.Type == "" {
		s.UpdateStrategy.Type = "RollingUpdate"
	}
	if s.UpdateStrategy.Type == "RollingUpdate" {
		if s.UpdateStrategy.RollingUpdate == nil {
			s.UpdateStrategy.RollingUpdate = &v1.RollingUpdateStatefulSetStrategy{}
		}
		if s.UpdateStrategy.RollingUpdate.Partition == nil {
			s.UpdateStrategy.RollingUpdate.Partition = proto.Int32(0)
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = proto.Int32(10)
	}
	if s.PersistentVolumeClaimRetentionPolicy == nil {
		s.PersistentVolumeClaimRetentionPolicy = &v1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = "Retain"
	}
	if p := s.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = "Retain"
	}
	for _, c := range s.VolumeClaimTemplates {
		defaultPVC(c)
		c.Status = nil
	}
	defaultTemplate(s.Template)
}

func defaultTemplate(t *v1.PodTemplateSpec) {
	if t != nil && t.Spec != nil {
		DefaultPodSpec(t.Spec)
	}
}
