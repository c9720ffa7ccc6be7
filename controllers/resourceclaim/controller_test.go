package resourceclaim_test

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
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/resourceclaim"
)

// A pod naming a template gets its own claim, made from the template
// (spec, labels, annotations), named <pod>-<entry>-<random>, owned by the
// pod and recorded in status.resourceClaimStatuses; a pod whose template
// appears later gets its claim then; a pod naming a claim directly gets
// nothing made.
func TestClaimsFromTemplates(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, time.Minute)
	c := s.Client
	d := controllertest.Deps(ctx, c)
	ctrl, err := resourceclaim.New(d, resourceclaim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, ctrl)

	templates := client.For[*v1.ResourceClaimTemplate](c)
	tmpl := &v1.ResourceClaimTemplate{Metadata: &v1.ObjectMeta{Name: "single-gpu", Namespace: "default"},
		Spec: &v1.ResourceClaimTemplateSpec{
			Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "inference"}, Annotations: map[string]string{"note": "x"}},
			Spec: &v1.ResourceClaimSpec{Devices: &v1.DeviceClaim{Requests: []*v1.DeviceRequest{{Name: "gpu",
				Exactly: &v1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}}}}}
	if _, err := templates.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	pods := client.For[*v1.Pod](c)
	newPod := func(name string, entries ...*v1.PodResourceClaim) *v1.Pod {
		p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "app", Image: "busybox"}}, ResourceClaims: entries}}
		p, err := pods.Create(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitClaim := func(p *v1.Pod, entry string) *v1.ResourceClaim {
		t.Helper()
		var got *v1.ResourceClaim
		wait.Eventually(t, 30*time.Second, "claim of "+p.Metadata.Name, func() error {
			cur, err := pods.Get(ctx, "default", p.Metadata.Name)
			if err != nil {
				return err
			}
			sts := cur.GetStatus().GetResourceClaimStatuses()
			if len(sts) != 1 || sts[0].Name != entry || sts[0].ResourceClaimName == nil {
				return fmt.Errorf("resourceClaimStatuses %v", sts)
			}
			got, err = client.For[*v1.ResourceClaim](c).Get(ctx, "default", *sts[0].ResourceClaimName)
			return err
		})
		return got
	}

	p := newPod("infer", &v1.PodResourceClaim{Name: "gpu", ResourceClaimTemplateName: proto.String("single-gpu")})
	claim := waitClaim(p, "gpu")
	m := claim.Metadata
	if !strings.HasPrefix(m.Name, "infer-gpu-") || len(m.Name) != len("infer-gpu-")+5 {
		t.Errorf("claim name %q, want infer-gpu-<5 random>", m.Name)
	}
	if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Uid != p.Metadata.Uid || m.OwnerReferences[0].Kind != "Pod" ||
		!m.OwnerReferences[0].Controller || !m.OwnerReferences[0].BlockOwnerDeletion {
		t.Errorf("owner references %v", m.OwnerReferences)
	}
	if m.Labels["app"] != "inference" || m.Annotations["note"] != "x" || m.Annotations[resourceclaim.PodClaimNameAnnotation] != "gpu" {
		t.Errorf("labels %v annotations %v", m.Labels, m.Annotations)
	}
	if e := claim.Spec.Devices.Requests[0].Exactly; e.DeviceClassName != "gpu.example.com" || e.Count != 1 {
		t.Errorf("claim spec %v", claim.Spec)
	}

	direct := newPod("direct", &v1.PodResourceClaim{Name: "gpu", ResourceClaimName: proto.String("shared")})
	// The template comes after the pod.
	late := newPod("late", &v1.PodResourceClaim{Name: "acc", ResourceClaimTemplateName: proto.String("later")})
	tmpl.Metadata = &v1.ObjectMeta{Name: "later", Namespace: "default"}
	if _, err := templates.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	if got := waitClaim(late, "acc"); !strings.HasPrefix(got.Metadata.Name, "late-acc-") {
		t.Errorf("late claim %q", got.Metadata.Name)
	}

	// A direct claim: nothing is made.
	claims, _, err := client.For[*v1.ResourceClaim](c).List(ctx, client.ListOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range claims {
		if rc.Metadata.OwnerReferences[0].Uid == direct.Metadata.Uid {
			t.Errorf("a claim was made for a pod that names its claim: %s", rc.Metadata.Name)
		}
	}
	if len(claims) != 2 {
		t.Errorf("%d claims, want 2", len(claims))
	}
}
