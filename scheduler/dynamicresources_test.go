package scheduler

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// A pod that uses ResourceClaims stays Pending with the reason in
// "0/N nodes are available: ...": while its claim is missing, Kubernetes'
// not-found text; once it exists, that nothing can allocate it (no DRA
// driver runs); a template-based claim not made yet says so, one owned
// by another pod is refused, one owned by the pod cannot be allocated. A pod
// without claims on the same nodes is bound.
func TestResourceClaimPodStaysPending(t *testing.T) {
	srv := apiservertest.Start(t)
	c := srv.Client
	ctx := t.Context()
	createNode(t, c, makeNode("node-1", "4", "8Gi"))
	createNode(t, c, makeNode("node-2", "4", "8Gi"))
	withClaims := func(entries ...*v1.PodResourceClaim) podOpt {
		return func(p *v1.Pod) {
			p.Spec.ResourceClaims = entries
			for _, e := range entries {
				p.Spec.Containers[0].Resources.Claims = append(p.Spec.Containers[0].Resources.Claims, &v1.ContainerResourceClaim{Name: e.Name})
			}
		}
	}
	createPods(t, c, []*v1.Pod{
		makePod("direct", "100m", "64Mi", withClaims(&v1.PodResourceClaim{Name: "gpu", ResourceClaimName: proto.String("gpu")})),
		makePod("templated", "100m", "64Mi", withClaims(&v1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: proto.String("single-gpu")})),
		makePod("plain", "100m", "64Mi"),
	})
	startScheduler(t, srv, Config{})
	unschedulable := func(pod, want string) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, pod+" unschedulable", func() error {
			p := getPod(t, c, pod)
			cd := podScheduledCondition(p)
			if p.GetSpec().GetNodeName() != "" {
				return fmt.Errorf("bound to %s", p.Spec.NodeName)
			}
			if cd == nil || cd.Status != "False" || cd.Reason != "Unschedulable" || !strings.Contains(cd.Message, want) {
				return fmt.Errorf("PodScheduled %v, want message %q", cd, want)
			}
			for _, e := range events(t, c, pod, "FailedScheduling") {
				if strings.Contains(e.Message, want) {
					return nil
				}
			}
			return fmt.Errorf("no FailedScheduling event with %q", want)
		})
	}
	unschedulable("direct", `0/2 nodes are available: 2 resourceclaim "gpu" not found.`)
	unschedulable("templated", `0/2 nodes are available: 2 pod "default/templated": ResourceClaim not created yet.`)
	wait.Eventually(t, 30*time.Second, "plain bound", func() error {
		if getPod(t, c, "plain").GetSpec().GetNodeName() == "" {
			return fmt.Errorf("plain not bound")
		}
		return nil
	})

	claim := &v1.ResourceClaim{Metadata: &v1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: &v1.ResourceClaimSpec{Devices: &v1.DeviceClaim{Requests: []*v1.DeviceRequest{{Name: "gpu", Exactly: &v1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}
	if _, err := client.For[*v1.ResourceClaim](c).Create(ctx, claim); err != nil {
		t.Fatal(err)
	}
	unschedulable("direct", `0/2 nodes are available: 2 claim "gpu", request gpu: device class gpu.example.com does not exist.`)
	if _, err := client.For[*v1.DeviceClass](c).Create(ctx, &v1.DeviceClass{Metadata: &v1.ObjectMeta{Name: "gpu.example.com"}}); err != nil {
		t.Fatal(err)
	}
	unschedulable("direct", `0/2 nodes are available: 2 node(s) cannot allocate claim "gpu": no DRA driver publishes devices in this cluster (Tugboat does not implement resource drivers).`)

	// The controller's part, done by hand: a claim made for the templated
	// pod but owned by another is refused; owned by the pod, it cannot
	// be allocated either.
	templated := getPod(t, c, "templated")
	made := &v1.ResourceClaim{Metadata: &v1.ObjectMeta{Name: "templated-gpu-x7k2p", Namespace: "default",
		OwnerReferences: []*v1.OwnerReference{{ApiVersion: "v1", Kind: "Pod", Name: "templated", Uid: "someone-else", Controller: true}}},
		Spec: claim.Spec}
	if _, err := client.For[*v1.ResourceClaim](c).Create(ctx, made); err != nil {
		t.Fatal(err)
	}
	templated.Status.ResourceClaimStatuses = []*v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: proto.String(made.Metadata.Name)}}
	if _, err := client.For[*v1.Pod](c).UpdateStatus(ctx, templated); err != nil {
		t.Fatal(err)
	}
	unschedulable("templated", `0/2 nodes are available: 2 ResourceClaim templated-gpu-x7k2p was not created for pod default/templated (pod is not owner).`)
	got, err := client.For[*v1.ResourceClaim](c).Get(ctx, "default", made.Metadata.Name)
	if err != nil {
		t.Fatal(err)
	}
	got.Metadata.OwnerReferences[0].Uid = templated.Metadata.Uid
	if _, err := client.For[*v1.ResourceClaim](c).Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	unschedulable("templated", `0/2 nodes are available: 2 node(s) cannot allocate claim "templated-gpu-x7k2p": no DRA driver publishes devices in this cluster`)
}
