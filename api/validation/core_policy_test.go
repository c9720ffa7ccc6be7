package validation_test

import (
	"testing"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func limitRange(items ...*v1.LimitRangeItem) func() v1.Object {
	return func() v1.Object {
		return &v1.LimitRange{Metadata: &v1.ObjectMeta{Name: "lr", Namespace: "default"}, Spec: &v1.LimitRangeSpec{Limits: items}}
	}
}

func rq(hard map[string]string) func() v1.Object {
	return func() v1.Object {
		return &v1.ResourceQuota{Metadata: &v1.ObjectMeta{Name: "q", Namespace: "default"}, Spec: &v1.ResourceQuotaSpec{Hard: hard}}
	}
}

func TestLimitRangeValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{name: "docs example", obj: limitRange(&v1.LimitRangeItem{Type: "Container", Default: map[string]string{"cpu": "500m"}, DefaultRequest: map[string]string{"cpu": "500m"},
			Max: map[string]string{"cpu": "1"}, Min: map[string]string{"cpu": "100m"}})},
		{name: "pod and claim", obj: limitRange(&v1.LimitRangeItem{Type: "Pod", Max: map[string]string{"memory": "1Gi"}, MaxLimitRequestRatio: map[string]string{"cpu": "4"}},
			&v1.LimitRangeItem{Type: "PersistentVolumeClaim", Max: map[string]string{"storage": "2Gi"}})},
		// Defaulted: default = max (500m), so the default request is over both.
		{name: "defaulted default limit", obj: limitRange(&v1.LimitRangeItem{Type: "Container", Max: map[string]string{"cpu": "500m"}, DefaultRequest: map[string]string{"cpu": "1"}}),
			errors: []string{"spec.limits[0].defaultRequest.cpu: default request value 1 is greater than max value 500m", "default request value 1 is greater than default limit value 500m"}},
		{name: "missing type", obj: limitRange(&v1.LimitRangeItem{Max: map[string]string{"cpu": "1"}}), errors: []string{"spec.limits[0].type: required"}},
		{name: "min over default", obj: limitRange(&v1.LimitRangeItem{Type: "Container", Min: map[string]string{"memory": "1Gi"}, Default: map[string]string{"memory": "512Mi"}}),
			errors: []string{"spec.limits[0].default.memory: min value 1Gi is greater than default value 512Mi"}},
		{name: "ratio over max/min", obj: limitRange(&v1.LimitRangeItem{Type: "Container", Min: map[string]string{"cpu": "100m"}, Max: map[string]string{"cpu": "200m"}, MaxLimitRequestRatio: map[string]string{"cpu": "3"}}),
			errors: []string{"spec.limits[0].maxLimitRequestRatio.cpu: ratio 3 is greater than max/min = 2.000000"}},
		{name: "claim default", obj: limitRange(&v1.LimitRangeItem{Type: "PersistentVolumeClaim", Max: map[string]string{"storage": "1Gi"}, Default: map[string]string{"storage": "1Gi"}}),
			errors: []string{"spec.limits[0].default: may not be specified when `type` is 'PersistentVolumeClaim'"}},
		{name: "claim cpu", obj: limitRange(&v1.LimitRangeItem{Type: "PersistentVolumeClaim", Max: map[string]string{"cpu": "1", "storage": "1Gi"}}),
			errors: []string{`spec.limits[0].max.cpu: unknown resource "cpu" for type PersistentVolumeClaim (storage)`}},
	})
}

func TestLimitRangeDefaults(t *testing.T) {
	lr := limitRange(&v1.LimitRangeItem{Type: "Container", Max: map[string]string{"cpu": "1", "memory": "1Gi"}, Min: map[string]string{"memory": "64Mi"}, Default: map[string]string{"memory": "256Mi"}},
		&v1.LimitRangeItem{Type: "Pod", Max: map[string]string{"cpu": "2"}})().(*v1.LimitRange)
	k, _ := kinds.ForMessage(lr)
	k.Default(lr)
	c, p := lr.Spec.Limits[0], lr.Spec.Limits[1]
	if c.Default["cpu"] != "1" || c.Default["memory"] != "256Mi" || c.DefaultRequest["cpu"] != "1" || c.DefaultRequest["memory"] != "256Mi" {
		t.Errorf("container item defaulted to default %v, defaultRequest %v", c.Default, c.DefaultRequest)
	}
	if p.Default != nil || p.DefaultRequest != nil {
		t.Errorf("pod item defaulted: %v %v", p.Default, p.DefaultRequest)
	}
	only := limitRange(&v1.LimitRangeItem{Type: "Container", Min: map[string]string{"cpu": "100m"}})().(*v1.LimitRange)
	k.Default(only)
	if got := only.Spec.Limits[0].DefaultRequest["cpu"]; got != "100m" || only.Spec.Limits[0].Default["cpu"] != "" {
		t.Errorf("min only: defaultRequest %q, default %v", got, only.Spec.Limits[0].Default)
	}
}

func TestResourceQuotaValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{name: "compute and counts", obj: rq(map[string]string{"requests.cpu": "4", "limits.memory": "8Gi", "pods": "10", "count/deployments.apps": "2", "services.nodeports": "0"})},
		{name: "unknown", obj: rq(map[string]string{"nvidia.com/gpu": "1"}), errors: []string{`spec.hard.nvidia.com/gpu: resource "nvidia.com/gpu" is not supported in a quota`}},
		{name: "fraction", obj: rq(map[string]string{"secrets": "500m"}), errors: []string{"spec.hard.secrets: 500m: must be an integer"}},
		{name: "negative", obj: rq(map[string]string{"requests.memory": "-1Gi"}), errors: []string{`spec.hard.requests.memory: quantity "-1Gi" must not be negative`}},
	})
}

// A pod that limits but does not request a resource requests its limit.
func TestPodRequestsDefaultToLimits(t *testing.T) {
	p := &v1.Pod{Metadata: &v1.ObjectMeta{Name: "p"}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "x",
		Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}, Limits: map[string]string{"cpu": "1", "memory": "1Gi"}}}}}}
	k, _ := kinds.ForMessage(p)
	k.Default(p)
	if r := p.Spec.Containers[0].Resources.Requests; r["cpu"] != "100m" || r["memory"] != "1Gi" {
		t.Errorf("requests %v", r)
	}
}
