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
