package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func deviceClass() *v1.DeviceClass {
	params, _ := structpb.NewStruct(map[string]any{"sharing": "TimeSlicing"})
	return &v1.DeviceClass{Metadata: &v1.ObjectMeta{Name: "gpu.example.com"},
		Spec: &v1.DeviceClassSpec{
			Selectors: []*v1.DeviceSelector{{Cel: &v1.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}},
			Config:    []*v1.DeviceClassConfiguration{{Opaque: &v1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: params}}}}}
}

func TestDeviceClassValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return deviceClass() }, nil},
		{"no spec", func() v1.Object { return &v1.DeviceClass{Metadata: &v1.ObjectMeta{Name: "any"}} }, nil},
		{"namespaced", func() v1.Object { c := deviceClass(); c.Metadata.Namespace = "default"; return c },
			[]string{"metadata.namespace", "not namespaced"}},
		{"selector without cel", func() v1.Object { c := deviceClass(); c.Spec.Selectors[0].Cel = nil; return c },
			[]string{"spec.selectors[0].cel: Required value"}},
		{"empty expression", func() v1.Object { c := deviceClass(); c.Spec.Selectors[0].Cel.Expression = ""; return c },
			[]string{"spec.selectors[0].cel.expression: Required value"}},
		{"long expression", func() v1.Object {
			c := deviceClass()
			c.Spec.Selectors[0].Cel.Expression = strings.Repeat("x", 10*1024+1)
			return c
		}, []string{"spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"}},
		{"too many selectors", func() v1.Object {
			c := deviceClass()
			for range 32 {
				c.Spec.Selectors = append(c.Spec.Selectors, c.Spec.Selectors[0])
			}
			return c
		}, []string{"spec.selectors: Too many: 33: must have at most 32 items"}},
		{"config without opaque", func() v1.Object { c := deviceClass(); c.Spec.Config[0].Opaque = nil; return c },
			[]string{"spec.config[0].opaque: Required value"}},
		{"driver missing", func() v1.Object { c := deviceClass(); c.Spec.Config[0].Opaque.Driver = ""; return c },
			[]string{"spec.config[0].opaque.driver: Required value"}},
		{"driver not a DNS subdomain", func() v1.Object { c := deviceClass(); c.Spec.Config[0].Opaque.Driver = "GPU_driver"; return c },
			[]string{"spec.config[0].opaque.driver"}},
		{"parameters missing", func() v1.Object { c := deviceClass(); c.Spec.Config[0].Opaque.Parameters = nil; return c },
			[]string{"spec.config[0].opaque.parameters: Required value"}},
	})
}

func resourceClaim() *v1.ResourceClaim {
	return &v1.ResourceClaim{Metadata: &v1.ObjectMeta{Name: "gpu", Namespace: "default"},
		Spec: &v1.ResourceClaimSpec{Devices: &v1.DeviceClaim{
			Requests: []*v1.DeviceRequest{{Name: "gpu", Exactly: &v1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}},
		}}}
}

func TestResourceClaimValidation(t *testing.T) {
	exactly := func(c *v1.ResourceClaim) *v1.ExactDeviceRequest { return c.Spec.Devices.Requests[0].Exactly }
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return resourceClaim() }, nil},
		{"all devices", func() v1.Object { c := resourceClaim(); exactly(c).AllocationMode = "All"; return c }, nil},
		{"first available", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Requests[0] = &v1.DeviceRequest{Name: "gpu", FirstAvailable: []*v1.DeviceSubRequest{
				{Name: "large", DeviceClassName: "large.example.com"}, {Name: "small", DeviceClassName: "small.example.com", Count: 2}}}
			c.Spec.Devices.Config = []*v1.DeviceClaimConfiguration{{Requests: []string{"gpu/small"},
				Opaque: &v1.OpaqueDeviceConfiguration{Driver: "gpu.example.com", Parameters: &structpb.Struct{}}}}
			return c
		}, nil},
		{"request name not a DNS label", func() v1.Object { c := resourceClaim(); c.Spec.Devices.Requests[0].Name = "GPU_0"; return c },
			[]string{"spec.devices.requests[0].name"}},
		{"request name missing", func() v1.Object { c := resourceClaim(); c.Spec.Devices.Requests[0].Name = ""; return c },
			[]string{"spec.devices.requests[0].name: Required value"}},
		{"duplicate request", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, &v1.DeviceRequest{Name: "gpu", Exactly: &v1.ExactDeviceRequest{DeviceClassName: "x"}})
			return c
		}, []string{`spec.devices.requests[1].name: Duplicate value: "gpu"`}},
		{"neither exactly nor firstAvailable", func() v1.Object { c := resourceClaim(); c.Spec.Devices.Requests[0].Exactly = nil; return c },
			[]string{"spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"}},
		{"both", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Requests[0].FirstAvailable = []*v1.DeviceSubRequest{{Name: "a", DeviceClassName: "x"}}
			return c
		}, []string{"spec.devices.requests[0]: Forbidden: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"}},
		{"deviceClassName missing", func() v1.Object { c := resourceClaim(); exactly(c).DeviceClassName = ""; return c },
			[]string{"spec.devices.requests[0].exactly.deviceClassName: Required value"}},
		{"negative count", func() v1.Object { c := resourceClaim(); exactly(c).Count = -1; return c },
			[]string{"spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"}},
		{"count with All", func() v1.Object {
			c := resourceClaim()
			exactly(c).AllocationMode, exactly(c).Count = "All", 2
			return c
		},
			[]string{"spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"}},
		{"bad allocation mode", func() v1.Object { c := resourceClaim(); exactly(c).AllocationMode = "Some"; return c },
			[]string{`spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some"`}},
		{"admin access refused", func() v1.Object { c := resourceClaim(); exactly(c).AdminAccess = proto.Bool(true); return c },
			[]string{"spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access is not supported"}},
		{"toleration Exists with a value", func() v1.Object {
			c := resourceClaim()
			exactly(c).Tolerations = []*v1.DeviceToleration{{Key: "example.com/dirty", Operator: "Exists", Value: "x"}}
			return c
		}, []string{"spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: \"x\": must be empty when `operator` is 'Exists'"}},
		{"toleration seconds without NoExecute", func() v1.Object {
			c := resourceClaim()
			exactly(c).Tolerations = []*v1.DeviceToleration{{Key: "k", Effect: "NoSchedule", TolerationSeconds: proto.Int64(5)}}
			return c
		}, []string{"spec.devices.requests[0].exactly.tolerations[0].effect"}},
		{"duplicate subrequest", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Requests[0] = &v1.DeviceRequest{Name: "gpu", FirstAvailable: []*v1.DeviceSubRequest{
				{Name: "a", DeviceClassName: "x"}, {Name: "a", DeviceClassName: "x"}}}
			return c
		}, []string{`spec.devices.requests[0].firstAvailable[1].name: Duplicate value: "a"`}},
		{"constraint names an unknown request", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Constraints = []*v1.DeviceConstraint{{Requests: []string{"tpu"}, MatchAttribute: proto.String("example.com/numa")}}
			return c
		}, []string{`spec.devices.constraints[0].requests[0]: Invalid value: "tpu": must be the name of a request in the claim`}},
		{"constraint without matchAttribute", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Constraints = []*v1.DeviceConstraint{{}}
			return c
		}, []string{"spec.devices.constraints[0].matchAttribute: Required value"}},
		{"matchAttribute without a domain", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Constraints = []*v1.DeviceConstraint{{MatchAttribute: proto.String("numa")}}
			return c
		}, []string{"spec.devices.constraints[0].matchAttribute: Required value: must include a domain"}},
		{"config without opaque", func() v1.Object {
			c := resourceClaim()
			c.Spec.Devices.Config = []*v1.DeviceClaimConfiguration{{}}
			return c
		}, []string{"spec.devices.config[0].opaque: Required value"}},
		{"reservedFor without allocation", func() v1.Object {
			c := resourceClaim()
			c.Status = &v1.ResourceClaimStatus{ReservedFor: []*v1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", Uid: "u"}}}
			return c
		}, []string{"status.reservedFor: Forbidden"}},
	})
}

func TestResourceClaimDefaults(t *testing.T) {
	c := resourceClaim()
	c.Spec.Devices.Requests[0].Exactly.Tolerations = []*v1.DeviceToleration{{Key: "k"}}
	c.Spec.Devices.Requests = append(c.Spec.Devices.Requests, &v1.DeviceRequest{Name: "any", FirstAvailable: []*v1.DeviceSubRequest{
		{Name: "all", DeviceClassName: "x", AllocationMode: "All"}, {Name: "one", DeviceClassName: "x"}}})
	if got := validate(c); got != "" {
		t.Fatal(got)
	}
	e := c.Spec.Devices.Requests[0].Exactly
	if e.AllocationMode != "ExactCount" || e.Count != 1 || e.Tolerations[0].Operator != "Equal" {
		t.Errorf("exactly defaulted to %v", e)
	}
	subs := c.Spec.Devices.Requests[1].FirstAvailable
	if subs[0].AllocationMode != "All" || subs[0].Count != 0 || subs[1].AllocationMode != "ExactCount" || subs[1].Count != 1 {
		t.Errorf("firstAvailable defaulted to %v", subs)
	}
}

func TestResourceClaimSpecImmutable(t *testing.T) {
	k, _ := kinds.Lookup("resourceclaims")
	old, next := resourceClaim(), resourceClaim()
	next.Spec.Devices.Requests[0].Exactly.DeviceClassName = "other.example.com"
	if errs := k.ValidateUpdate(old, next); !strings.Contains(errs.Err("ResourceClaim", "gpu").Error(), "spec: Invalid value: field is immutable") {
		t.Errorf("got %v", errs)
	}
	if errs := k.ValidateUpdate(old, resourceClaim()); len(errs) != 0 {
		t.Errorf("unchanged: %v", errs)
	}
}

func TestResourceClaimTemplateValidation(t *testing.T) {
	template := func() *v1.ResourceClaimTemplate {
		return &v1.ResourceClaimTemplate{Metadata: &v1.ObjectMeta{Name: "gpu", Namespace: "default"},
			Spec: &v1.ResourceClaimTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "x"}}, Spec: resourceClaim().Spec}}
	}
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return template() }, nil},
		{"no spec", func() v1.Object { tp := template(); tp.Spec = nil; return tp }, []string{"spec: Required value"}},
		{"claim spec checked", func() v1.Object {
			tp := template()
			tp.Spec.Spec.Devices.Requests[0].Exactly.DeviceClassName = ""
			return tp
		},
			[]string{"spec.spec.devices.requests[0].exactly.deviceClassName: Required value"}},
		{"name refused", func() v1.Object { tp := template(); tp.Spec.Metadata.Name = "fixed"; return tp },
			[]string{"spec.metadata.name: Forbidden: not supported"}},
		{"bad label", func() v1.Object { tp := template(); tp.Spec.Metadata.Labels = map[string]string{"a b": "x"}; return tp },
			[]string{"spec.metadata.labels"}},
	})
}
