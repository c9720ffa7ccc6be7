package describe

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// describe pod shows the pod's claims (a claim by name, a template with
// the claim made from it or not yet) and each container's.
func TestDescribePodResourceClaims(t *testing.T) {
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: &v1.PodSpec{
			Containers: []*v1.Container{{Name: "app", Image: "x", Resources: &v1.ResourceRequirements{
				Claims: []*v1.ContainerResourceClaim{{Name: "gpu"}, {Name: "shared", Request: "big"}}}}},
			ResourceClaims: []*v1.PodResourceClaim{
				{Name: "gpu", ResourceClaimTemplateName: proto.String("single-gpu")},
				{Name: "shared", ResourceClaimName: proto.String("shared-gpus")},
				{Name: "later", ResourceClaimTemplateName: proto.String("single-gpu")},
			}},
		Status: &v1.PodStatus{Phase: "Pending", ResourceClaimStatuses: []*v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: proto.String("p-gpu-x7k2p")}}}}
	var buf bytes.Buffer
	if err := Object(context.Background(), &buf, nil, p, false); err != nil {
		t.Fatal(err)
	}
	got := buf.String()
	for _, want := range []string{
		"    Claims:\n      gpu\n      shared (request big)\n",
		"Resource Claims:\n  gpu:\n    ResourceClaimTemplate:  single-gpu\n    ResourceClaim:          p-gpu-x7k2p\n" +
			"  shared:\n    ResourceClaim:  shared-gpus\n" +
			"  later:\n    ResourceClaimTemplate:  single-gpu\n    ResourceClaim:          <not created yet>\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("describe output\n%s\nlacks\n%s", got, want)
		}
	}
}
