// The autoscaling group (autoscaling/v2): its kinds and their defaults.

package kinds

import (
	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// autoscalingKinds is the autoscaling group, autoscaling/v2.
var autoscalingKinds = []*Kind{
	{Name: "HorizontalPodAutoscaler", Plural: "horizontalpodautoscalers", Short: []string{"hpa"}, APIVersion: "autoscaling/v2", Namespaced: true,
		New: func() v1.Object { return &v1.HorizontalPodAutoscaler{} }, Default: typedDefault(defaultHPA), Validate: typed(validation.HorizontalPodAutoscaler)},
}

// defaultHPA fills what Kubernetes fills: minReplicas 1, cpu at 80%, and
// the default scaling behaviour (up: no stabilization, the larger of
// +100% and +4 pods per 15s; down: 300s stabilization, -100% per 15s).
func defaultHPA(h *v1.HorizontalPodAutoscaler) {
	s := h.Spec
	if s == nil {
		return
	}
	if s.MinReplicas == nil {
		s.MinReplicas = proto.Int32(1)
	}
	if len(s.Metrics) == 0 {
		s.Metrics = []*v1.MetricSpec{{Type: "Resource", Resource: &v1.ResourceMetricSource{Name: "cpu",
			Target: &v1.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(80)}}}}
	}
	if s.Behavior == nil {
		s.Behavior = &v1.HorizontalPodAutoscalerBehavior{}
	}
	if s.Behavior.ScaleUp == nil {
		s.Behavior.ScaleUp = &v1.HPAScalingRules{}
	}
	if s.Behavior.ScaleDown == nil {
		s.Behavior.ScaleDown = &v1.HPAScalingRules{}
	}
	up, down := s.Behavior.ScaleUp, s.Behavior.ScaleDown
	if up.StabilizationWindowSeconds == nil {
		up.StabilizationWindowSeconds = proto.Int32(0)
	}
	if down.StabilizationWindowSeconds == nil {
		down.StabilizationWindowSeconds = proto.Int32(300)
	}
	for _, r := range []*v1.HPAScalingRules{up, down} {
		if r.SelectPolicy == "" {
			r.SelectPolicy = "Max"
		}
	}
	if len(up.Policies) == 0 {
		up.Policies = []*v1.HPAScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}, {Type: "Pods", Value: 4, PeriodSeconds: 15}}
	}
	if len(down.Policies) == 0 {
		down.Policies = []*v1.HPAScalingPolicy{{Type: "Percent", Value: 100, PeriodSeconds: 15}}
	}
}
