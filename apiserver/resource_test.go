package apiserver_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// draYAML is Kubernetes' own shapes (resource.k8s.io/v1, 1.34): a class,
// a template and a claim.
const draYAML = `apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == "gpu.example.com"
  config:
  - opaque:
      driver: gpu.example.com
      parameters:
        apiVersion: gpu.example.com/v1
        kind: GpuConfig
        sharing: {strategy: TimeSlicing}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: single-gpu
  namespace: default
spec:
  metadata:
    labels: {app: inference}
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: shared-gpus
  namespace: default
spec:
  devices:
    requests:
    - name: big
      firstAvailable:
      - name: a100
        deviceClassName: gpu.example.com
        selectors:
        - cel:
            expression: device.attributes["gpu.example.com"].model == "A100"
      - name: any
        deviceClassName: gpu.example.com
        allocationMode: ExactCount
        count: 2
    - name: all
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: All
        tolerations:
        - {key: gpu.example.com/unhealthy, operator: Exists, effect: NoSchedule}
    constraints:
    - requests: [big, all]
      matchAttribute: gpu.example.com/numa
    config:
    - requests: [big/a100]
      opaque:
        driver: gpu.example.com
        parameters: {mode: exclusive}
`

// The three DRA kinds are stored in etcd as written (defaults added: a
// request's allocationMode ExactCount and count 1, a toleration's
// operator Equal) and read back the same; a claim's spec is immutable;
// a bad claim is refused naming the field and nothing is stored; status
// is not settable at create.
func TestResourceKindsStored(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := ctxT(t)
	objs, err := manifest.Decode("dra.yaml", []byte(draYAML))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.DeviceClass](s.Client).Create(ctx, objs[0].Object.(*v1.DeviceClass)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.ResourceClaimTemplate](s.Client).Create(ctx, objs[1].Object.(*v1.ResourceClaimTemplate)); err != nil {
		t.Fatal(err)
	}
	if _, err := client.For[*v1.ResourceClaim](s.Client).Create(ctx, objs[2].Object.(*v1.ResourceClaim)); err != nil {
		t.Fatal(err)
	}
	classes := client.For[*v1.DeviceClass](s.Client)
	dc, err := classes.Get(ctx, "", "gpu.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(dc.Spec, objs[0].Object.(*v1.DeviceClass).Spec) {
		t.Errorf("DeviceClass spec read back as %v", dc.Spec)
	}
	if got := dc.Spec.Config[0].Opaque.Parameters.Fields["sharing"].GetStructValue().Fields["strategy"].GetStringValue(); got != "TimeSlicing" {
		t.Errorf("opaque parameters: %v", dc.Spec.Config[0].Opaque.Parameters)
	}
	tmpl, err := client.For[*v1.ResourceClaimTemplate](s.Client).Get(ctx, "default", "single-gpu")
	if err != nil {
		t.Fatal(err)
	}
	if e := tmpl.Spec.Spec.Devices.Requests[0].Exactly; e.AllocationMode != "ExactCount" || e.Count != 1 || tmpl.Spec.Metadata.Labels["app"] != "inference" {
		t.Errorf("template read back as %v", tmpl.Spec)
	}
	claims := client.For[*v1.ResourceClaim](s.Client)
	c, err := claims.Get(ctx, "default", "shared-gpus")
	if err != nil {
		t.Fatal(err)
	}
	d := c.Spec.Devices
	if len(d.Requests) != 2 || d.Requests[0].FirstAvailable[1].Count != 2 || d.Requests[0].FirstAvailable[0].Count != 1 ||
		d.Requests[1].Exactly.AllocationMode != "All" || d.Requests[1].Exactly.Tolerations[0].Operator != "Exists" ||
		d.Constraints[0].GetMatchAttribute() != "gpu.example.com/numa" || d.Config[0].Requests[0] != "big/a100" {
		t.Errorf("claim read back as %v", d)
	}
	if c.GetStatus().GetAllocation() != nil || len(c.GetStatus().GetReservedFor()) > 0 {
		t.Errorf("a claim nothing allocated has status %v", c.Status)
	}

	c.Spec.Devices.Requests[1].Exactly.DeviceClassName = "other.example.com"
	if _, err := claims.Update(ctx, c); err == nil || !strings.Contains(err.Error(), "spec: Invalid value: field is immutable") {
		t.Errorf("spec update: %v", err)
	}

	bad := &v1.ResourceClaim{Metadata: &v1.ObjectMeta{Name: "bad", Namespace: "default"},
		Spec: &v1.ResourceClaimSpec{Devices: &v1.DeviceClaim{Requests: []*v1.DeviceRequest{{Name: "gpu", Exactly: &v1.ExactDeviceRequest{Count: -1}}}}}}
	_, err = claims.Create(ctx, bad)
	for _, want := range []string{"spec.devices.requests[0].exactly.deviceClassName: Required value", "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("bad claim: %v, want %q", err, want)
		}
	}
	if _, err := claims.Get(ctx, "default", "bad"); err == nil {
		t.Error("a refused claim was stored")
	}
	if _, err := manifest.Decode("x.yaml", []byte("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: x}\nspec:\n  extendedResourceName: example.com/gpu\n")); err == nil ||
		!strings.Contains(err.Error(), "spec.extendedResourceName: unknown field") {
		t.Errorf("extendedResourceName: %v", err)
	}
}
