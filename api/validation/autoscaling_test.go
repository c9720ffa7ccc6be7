package validation_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func hpa() *v1.HorizontalPodAutoscaler {
	return &v1.HorizontalPodAutoscaler{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.HorizontalPodAutoscalerSpec{ScaleTargetRef: &v1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", ApiVersion: "apps/v1"}, MaxReplicas: 5}}
}

func TestAutoscalingValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid", func() v1.Object { return hpa() }, nil},
		{"no target", func() v1.Object { h := hpa(); h.Spec.ScaleTargetRef = nil; return h }, []string{"spec.scaleTargetRef: required"}},
		{"max below min", func() v1.Object { h := hpa(); h.Spec.MinReplicas = proto.Int32(6); return h },
			[]string{"spec.maxReplicas: must be greater than or equal to minReplicas"}},
		{"zero min", func() v1.Object { h := hpa(); h.Spec.MinReplicas = proto.Int32(0); return h }, []string{"spec.minReplicas"}},
		{"external metric", func() v1.Object {
			h := hpa()
			h.Spec.Metrics = []*v1.MetricSpec{{Type: "External"}}
			return h
		}, []string{`spec.metrics[0].type: "External" is not supported`}},
		{"bad resource", func() v1.Object {
			h := hpa()
			h.Spec.Metrics = []*v1.MetricSpec{{Type: "Resource", Resource: &v1.ResourceMetricSource{Name: "gpu",
				Target: &v1.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(0)}}}}
			return h
		}, []string{"spec.metrics[0].resource.name", "averageUtilization: must be greater than 0"}},
		{"bad window", func() v1.Object {
			h := hpa()
			h.Spec.Behavior = &v1.HorizontalPodAutoscalerBehavior{ScaleDown: &v1.HPAScalingRules{StabilizationWindowSeconds: proto.Int32(-1)}}
			return h
		}, []string{"spec.behavior.scaleDown.stabilizationWindowSeconds"}},
	})
}
