package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func deployment() *v1.Deployment {
	p := pod()
	return &v1.Deployment{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.DeploymentSpec{
			Replicas: proto.Int32(3),
			Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: p.Spec},
		},
	}
}

func replicaSet() *v1.ReplicaSet {
	d := deployment()
	return &v1.ReplicaSet{Metadata: d.Metadata, Spec: &v1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
}

func TestAppsValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid deployment", func() v1.Object { return deployment() }, nil},
		{"selector mismatch", func() v1.Object { d := deployment(); d.Spec.Selector.MatchLabels["app"] = "db"; return d },
			[]string{"spec.template.metadata.labels", "does not match"}},
		{"no selector", func() v1.Object { d := deployment(); d.Spec.Selector = nil; return d }, []string{"spec.selector: required"}},
		{"negative replicas", func() v1.Object { d := deployment(); d.Spec.Replicas = proto.Int32(-1); return d }, []string{"spec.replicas"}},
		{"negative minReadySeconds", func() v1.Object { d := deployment(); d.Spec.MinReadySeconds = -1; return d }, []string{"spec.minReadySeconds"}},
		{"surge and unavailable zero", func() v1.Object {
			d := deployment()
			d.Spec.Strategy = &v1.DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &v1.RollingUpdateDeployment{MaxSurge: "0", MaxUnavailable: "0%"}}
			return d
		}, []string{"maxUnavailable", "may not be 0"}},
		{"surge over 100% allowed", func() v1.Object {
			d := deployment()
			d.Spec.Strategy = &v1.DeploymentStrategy{Type: "RollingUpdate", RollingUpdate: &v1.RollingUpdateDeployment{MaxSurge: "200%", MaxUnavailable: "1"}}
			return d
		}, nil},
		{"unavailable over 100%", func() v1.Object {
			d := deployment()
			d.Spec.Strategy = &v1.DeploymentStrategy{RollingUpdate: &v1.RollingUpdateDeployment{MaxSurge: "1", MaxUnavailable: "150%"}}
			return d
		}, []string{"maxUnavailable", "100%"}},
		{"template restart policy", func() v1.Object { d := deployment(); d.Spec.Template.Spec.RestartPolicy = "Never"; return d },
			[]string{"spec.template.spec.restartPolicy"}},
		{"template annotation", func() v1.Object {
			d := deployment()
			d.Spec.Template.Metadata.Annotations = map[string]string{"bad key!": "x"}
			return d
		}, []string{"spec.template.metadata.annotations[bad key!]"}},
		{"valid replicaset", func() v1.Object { return replicaSet() }, nil},
		{"replicaset without spec", func() v1.Object { r := replicaSet(); r.Spec = nil; return r }, []string{"spec: required"}},
		{"replicaset negative replicas", func() v1.Object { r := replicaSet(); r.Spec.Replicas = proto.Int32(-2); return r }, []string{"spec.replicas: must be >= 0"}},
		{"replicaset selector mismatch", func() v1.Object { r := replicaSet(); r.Spec.Selector.MatchLabels["app"] = "db"; return r },
			[]string{"spec.template.metadata.labels", "does not match"}},
		{"replicaset bad name", func() v1.Object { r := replicaSet(); r.Metadata.Name = "Web_1"; return r }, []string{"metadata.name"}},
		{"deployment without spec", func() v1.Object { d := deployment(); d.Spec = nil; return d }, []string{"spec: required"}},
	})
}

func TestSelectorImmutable(t *testing.T) {
	k, _ := kinds.Lookup("Deployment")
	old, next := deployment(), deployment()
	next.Spec.Selector.MatchLabels = map[string]string{"app": "other"}
	if errs := k.ValidateUpdate(old, next); len(errs) == 0 || !strings.Contains(errs.Err("Deployment", "web").Error(), "spec.selector: field is immutable") {
		t.Fatalf("want immutable selector, got %v", errs)
	}
	if errs := k.ValidateUpdate(old, deployment()); len(errs) != 0 {
		t.Fatalf("unchanged selector refused: %v", errs)
	}
	rk, _ := kinds.Lookup("ReplicaSet")
	oldRS, nextRS := replicaSet(), replicaSet()
	nextRS.Spec.Selector = &v1.LabelSelector{MatchLabels: map[string]string{"app": "other"}}
	if errs := rk.ValidateUpdate(oldRS, nextRS); len(errs) == 0 {
		t.Fatal("a ReplicaSet's selector changed")
	}
}

func daemonSet() *v1.DaemonSet {
	d := deployment()
	return &v1.DaemonSet{Metadata: &v1.ObjectMeta{Name: "agent", Namespace: "kube-system"},
		Spec: &v1.DaemonSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template}}
}

func TestDaemonSetValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return daemonSet() }, nil},
		{"selector mismatch", func() v1.Object { d := daemonSet(); d.Spec.Selector.MatchLabels["app"] = "x"; return d }, []string{"does not match"}},
		{"bad strategy", func() v1.Object {
			d := daemonSet()
			d.Spec.UpdateStrategy = &v1.DaemonSetUpdateStrategy{Type: "Recreate"}
			return d
		}, []string{"spec.updateStrategy.type"}},
		{"zero and zero", func() v1.Object {
			d := daemonSet()
			d.Spec.UpdateStrategy = &v1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &v1.RollingUpdateDaemonSet{MaxUnavailable: "0", MaxSurge: "0"}}
			return d
		}, []string{"spec.updateStrategy.rollingUpdate.maxUnavailable: may not be 0 when maxSurge is 0"}},
		{"matchFields", func() v1.Object {
			d := daemonSet()
			d.Spec.Template.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
				NodeSelectorTerms: []*v1.NodeSelectorTerm{{MatchFields: []*v1.LabelSelectorRequirement{{Key: "metadata.uid", Operator: "In", Values: []string{"a"}}}}}}}}
			return d
		}, []string{"matchFields[0].key", "only metadata.name"}},
		{"restart policy", func() v1.Object { d := daemonSet(); d.Spec.Template.Spec.RestartPolicy = "OnFailure"; return d },
			[]string{"spec.template.spec.restartPolicy"}},
	})
}

func statefulSet() *v1.StatefulSet {
	d := deployment()
	return &v1.StatefulSet{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &v1.StatefulSetSpec{
		Replicas: proto.Int32(3), ServiceName: "web", Selector: d.Spec.Selector, Template: d.Spec.Template,
		VolumeClaimTemplates: []*v1.PersistentVolumeClaim{{Metadata: &v1.ObjectMeta{Name: "www"}, Spec: &v1.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"}, Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}}},
	}}
}

func TestStatefulSetValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return statefulSet() }, nil},
		{"no serviceName", func() v1.Object { s := statefulSet(); s.Spec.ServiceName = ""; return s }, []string{"spec.serviceName: required"}},
		{"bad policy", func() v1.Object { s := statefulSet(); s.Spec.PodManagementPolicy = "Random"; return s }, []string{"spec.podManagementPolicy"}},
		{"claim without size", func() v1.Object { s := statefulSet(); s.Spec.VolumeClaimTemplates[0].Spec.Resources = nil; return s },
			[]string{"spec.volumeClaimTemplates[0].spec.resources.requests.storage: required"}},
		{"negative partition", func() v1.Object {
			s := statefulSet()
			s.Spec.UpdateStrategy = &v1.StatefulSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &v1.RollingUpdateStatefulSetStrategy{Partition: proto.Int32(-1)}}
			return s
		}, []string{"spec.updateStrategy.rollingUpdate.partition"}},
	})
}

func TestControllerRevisionValidation(t *testing.T) {
	rev := func() *v1.ControllerRevision {
		data, _ := structpb.NewStruct(map[string]any{"spec": map[string]any{"template": map[string]any{"$patch": "replace"}}})
		return &v1.ControllerRevision{Metadata: &v1.ObjectMeta{Name: "web-abc", Namespace: "default"}, Data: data, Revision: 1}
	}
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return rev() }, nil},
		{"any JSON object", func() v1.Object {
			r := rev()
			r.Data, _ = structpb.NewStruct(map[string]any{"anything": []any{1.0, "x"}})
			return r
		}, nil},
		{"no data", func() v1.Object { r := rev(); r.Data = nil; return r }, []string{"data: Required value: data is mandatory"}},
		{"negative revision", func() v1.Object { r := rev(); r.Revision = -1; return r }, []string{"revision: must be greater than or equal to 0"}},
	})
	k, _ := kinds.Lookup("ControllerRevision")
	old, renumbered, changed := rev(), rev(), rev()
	renumbered.Revision = 4
	changed.Data.Fields["spec"] = structpb.NewStringValue("x")
	if errs := k.ValidateUpdate(old, renumbered); len(errs) != 0 {
		t.Errorf("renumbering: %v", errs)
	}
	if errs := k.ValidateUpdate(old, changed); len(errs) != 1 || !strings.Contains(errs.Err("ControllerRevision", "web-abc").Error(), "data: field is immutable") {
		t.Errorf("changing data: %v", errs)
	}
}
