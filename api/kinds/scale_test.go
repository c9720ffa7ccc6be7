package kinds

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestScale(t *testing.T) {
	k, _ := Lookup("deployments")
	d := &v1.Deployment{}
	if k.Scale.Replicas(d) != 0 || k.Scale.LabelSelector(d) != nil {
		t.Fatal("an empty deployment has replicas or a selector")
	}
	k.Scale.SetReplicas(d, 4)
	d.Spec.Selector = &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	d.Status = &v1.DeploymentStatus{Replicas: 3}
	if d.Spec.GetReplicas() != 4 || k.Scale.Replicas(d) != 4 || k.Scale.CurrentReplicas(d) != 3 ||
		!proto.Equal(k.Scale.LabelSelector(d), d.Spec.Selector) {
		t.Fatalf("scale of %v", d)
	}
	if p, _ := Lookup("pods"); p.Scale != nil {
		t.Error("pods are not scalable")
	}
}
