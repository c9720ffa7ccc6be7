package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func claimPod() *v1.Pod {
	p := pod()
	p.Spec.ResourceClaims = []*v1.PodResourceClaim{
		{Name: "gpu", ResourceClaimTemplateName: proto.String("single-gpu")},
		{Name: "shared", ResourceClaimName: proto.String("shared-gpus")},
	}
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Claims: []*v1.ContainerResourceClaim{{Name: "gpu"}, {Name: "shared", Request: "big"}}}
	return p
}

func TestPodResourceClaimsValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return claimPod() }, nil},
		{"no source", func() v1.Object { p := claimPod(); p.Spec.ResourceClaims[0].ResourceClaimTemplateName = nil; return p },
			[]string{"spec.resourceClaims[0]: Required value: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`"}},
		{"two sources", func() v1.Object {
			p := claimPod()
			p.Spec.ResourceClaims[0].ResourceClaimName = proto.String("x")
			return p
		},
			[]string{"spec.resourceClaims[0]: Invalid value: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"}},
		{"duplicate name", func() v1.Object {
			p := claimPod()
			p.Spec.ResourceClaims[1].Name = "gpu"
			p.Spec.Containers[0].Resources.Claims = nil
			return p
		},
			[]string{`spec.resourceClaims[1].name: Duplicate value: "gpu"`}},
		{"name not a DNS label", func() v1.Object {
			p := claimPod()
			p.Spec.ResourceClaims[0].Name = "GPU"
			p.Spec.Containers[0].Resources.Claims = nil
			return p
		},
			[]string{"spec.resourceClaims[0].name"}},
		{"bad claim name", func() v1.Object {
			p := claimPod()
			p.Spec.ResourceClaims[1].ResourceClaimName = proto.String("Bad_Name")
			return p
		},
			[]string{"spec.resourceClaims[1].resourceClaimName"}},
		{"container names an unknown claim", func() v1.Object {
			p := claimPod()
			p.Spec.Containers[0].Resources.Claims[0].Name = "tpu"
			return p
		}, []string{`spec.containers[0].resources.claims[0]: Not found: "tpu": must be one of the names in pod.spec.resourceClaims: gpu, shared`}},
		{"container claim without pod claims", func() v1.Object {
			p := pod()
			p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Claims: []*v1.ContainerResourceClaim{{Name: "gpu"}}}
			return p
		}, []string{`spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names in pod.spec.resourceClaims which is empty`}},
		{"container claim twice", func() v1.Object {
			p := claimPod()
			p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, &v1.ContainerResourceClaim{Name: "gpu"})
			return p
		}, []string{`spec.containers[0].resources.claims[2]: Duplicate value: "gpu"`}},
		{"container claim without a name", func() v1.Object {
			p := claimPod()
			p.Spec.Containers[0].Resources.Claims[0].Name = ""
			return p
		}, []string{"spec.containers[0].resources.claims[0]: Required value"}},
		{"bad request name", func() v1.Object { p := claimPod(); p.Spec.Containers[0].Resources.Claims[1].Request = "Big"; return p },
			[]string{"spec.containers[0].resources.claims[1].request"}},
		{"nodeName with claims", func() v1.Object { p := claimPod(); p.Spec.NodeName = "n1"; return p },
			[]string{"spec.nodeName: Forbidden: a pod with resourceClaims must be placed by the scheduler"}},
		{"status names an unknown entry", func() v1.Object {
			p := claimPod()
			p.Status = &v1.PodStatus{ResourceClaimStatuses: []*v1.PodResourceClaimStatus{{Name: "tpu", ResourceClaimName: proto.String("p-tpu-abcde")}}}
			return p
		}, []string{`status.resourceClaimStatuses[0].name: Invalid value: "tpu": must match the name of an entry in ` + "`spec.resourceClaims`"}},
		{"status of a template entry", func() v1.Object {
			p := claimPod()
			p.Status = &v1.PodStatus{ResourceClaimStatuses: []*v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: proto.String("p-gpu-abcde")}}}
			return p
		}, nil},
	})
}
