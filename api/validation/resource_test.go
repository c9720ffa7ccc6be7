package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

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
