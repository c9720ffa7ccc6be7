package deploy

import (
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/revision"
	"google.golang.org/protobuf/proto"
)

// deploymentStatus is kubectl's logic: a table of the cases.
func TestDeploymentStatusMessages(t *testing.T) {
	dep := func(gen, observed int64, replicas int32, st *v1.DeploymentStatus) *v1.Deployment {
		st.ObservedGeneration = observed
		return &v1.Deployment{Metadata: &v1.ObjectMeta{Name: "d", Generation: gen, Annotations: map[string]string{revision.Annotation: "2"}},
			Spec: &v1.DeploymentSpec{Replicas: proto.Int32(replicas)}, Status: st}
	}
	tests := []struct {
		d        *v1.Deployment
		revision int64
		msg      string
		done     bool
		err      string
	}{
		{d: dep(2, 1, 1, &v1.DeploymentStatus{}), msg: "Waiting for deployment spec update to be observed...\n"},
		{d: dep(1, 1, 2, &v1.DeploymentStatus{UpdatedReplicas: 1}), msg: `Waiting for deployment "d" rollout to finish: 1 out of 2 new replicas have been updated...` + "\n"},
		{d: dep(1, 1, 2, &v1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}), msg: `deployment "d" successfully rolled out` + "\n", done: true},
		{d: dep(1, 1, 0, &v1.DeploymentStatus{}), msg: `deployment "d" successfully rolled out` + "\n", done: true},
		{d: dep(1, 1, 2, &v1.DeploymentStatus{Conditions: []*v1.Condition{{Type: "Progressing", Reason: TimedOutReason}}}), err: "exceeded its progress deadline"},
		{d: dep(1, 1, 2, &v1.DeploymentStatus{}), revision: 3, err: "desired revision (3) is different from the running revision (2)"},
	}
	for i, tc := range tests {
		msg, done, err := deploymentStatus(tc.d, tc.revision)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%d: err = %v, want %q", i, err, tc.err)
			}
			continue
		}
		if err != nil || msg != tc.msg || done != tc.done {
			t.Errorf("%d: got %q %v %v, want %q %v", i, msg, done, err, tc.msg, tc.done)
		}
	}
}

// daemonSetStatus and statefulSetStatus are kubectl's status viewers.
func TestDaemonSetAndStatefulSetStatusMessages(t *testing.T) {
	ds := func(gen int64, typ string, st *v1.DaemonSetStatus) *v1.DaemonSet {
		return &v1.DaemonSet{Metadata: &v1.ObjectMeta{Name: "agent", Generation: gen},
			Spec: &v1.DaemonSetSpec{UpdateStrategy: &v1.DaemonSetUpdateStrategy{Type: typ}}, Status: st}
	}
	sts := func(gen int64, replicas, partition int32, st *v1.StatefulSetStatus) *v1.StatefulSet {
		s := &v1.StatefulSet{Metadata: &v1.ObjectMeta{Name: "web", Generation: gen},
			Spec: &v1.StatefulSetSpec{Replicas: proto.Int32(replicas), UpdateStrategy: &v1.StatefulSetUpdateStrategy{Type: "RollingUpdate"}}, Status: st}
		if partition > 0 {
			s.Spec.UpdateStrategy.RollingUpdate = &v1.RollingUpdateStatefulSetStrategy{Partition: proto.Int32(partition)}
		}
		return s
	}
	tests := []struct {
		obj  v1.Object
		msg  string
		done bool
		err  string
	}{
		{obj: ds(2, "RollingUpdate", &v1.DaemonSetStatus{ObservedGeneration: 1}), msg: "Waiting for daemon set spec update to be observed...\n"},
		{obj: ds(1, "RollingUpdate", &v1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 1}),
			msg: `Waiting for daemon set "agent" rollout to finish: 1 out of 3 new pods have been updated...` + "\n"},
		{obj: ds(1, "", &v1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 2}),
			msg: `Waiting for daemon set "agent" rollout to finish: 2 of 3 updated pods are available...` + "\n"},
		{obj: ds(1, "RollingUpdate", &v1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3}),
			msg: `daemon set "agent" successfully rolled out` + "\n", done: true},
		{obj: ds(1, "OnDelete", &v1.DaemonSetStatus{}), err: "only available for RollingUpdate"},
		{obj: sts(1, 3, 0, &v1.StatefulSetStatus{}), msg: "Waiting for statefulset spec update to be observed...\n"},
		{obj: sts(1, 3, 0, &v1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 1}), msg: "Waiting for 2 pods to be ready...\n"},
		{obj: sts(1, 3, 2, &v1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 3}),
			msg: "Waiting for partitioned roll out to finish: 0 out of 1 new pods have been updated...\n"},
		{obj: sts(1, 3, 2, &v1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 3, UpdatedReplicas: 1}),
			msg: "partitioned roll out complete: 1 new pods have been updated...\n", done: true},
		{obj: sts(1, 3, 0, &v1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 3, UpdatedReplicas: 1, CurrentRevision: "web-a", UpdateRevision: "web-b"}),
			msg: "waiting for statefulset rolling update to complete 1 pods at revision web-b...\n"},
		{obj: sts(1, 3, 0, &v1.StatefulSetStatus{ObservedGeneration: 1, ReadyReplicas: 3, CurrentReplicas: 3, CurrentRevision: "web-b", UpdateRevision: "web-b"}),
			msg: "statefulset rolling update complete 3 pods at revision web-b...\n", done: true},
	}
	for i, tc := range tests {
		msg, done, err := workloadStatus(tc.obj, 0)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%d: err = %v, want %q", i, err, tc.err)
			}
			continue
		}
		if err != nil || msg != tc.msg || done != tc.done {
			t.Errorf("%d: got %q %v %v, want %q %v", i, msg, done, err, tc.msg, tc.done)
		}
	}
}
