package podautoscaler_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/deployment"
	"github.com/tugboat/tugboat/controllers/podautoscaler"
	"github.com/tugboat/tugboat/controllers/replicaset"
)

// A Deployment whose pods burn twice their cpu request scales up to
// maxReplicas; when the load stops it scales back down once the (short)
// down-scale stabilization window has passed. The usage comes from the
// fake kubelets' NodeAPI.Stats through the apiserver's node relay.
func TestScalesWithCPU(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	rsc, _ := replicaset.New(d, replicaset.Config{})
	dc, _ := deployment.New(d, deployment.Config{})
	hc, err := podautoscaler.New(d, podautoscaler.Config{SyncPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var load atomic.Bool
	load.Store(true)
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2"},
		Usage: func(p *v1.Pod) (int64, int64) {
			if load.Load() {
				return 200, 64 << 20
			}
			return 5, 64 << 20
		}})
	controllertest.RunAll(ctx, t, d.Informers, rsc, dc, hc)
	lbl := map[string]string{"app": "burn"}
	deps := client.For[*v1.Deployment](s.Client)
	if _, err := deps.Create(ctx, &v1.Deployment{Metadata: &v1.ObjectMeta{Name: "burn", Namespace: "default"}, Spec: &v1.DeploymentSpec{
		Replicas: proto.Int32(1), Selector: &v1.LabelSelector{MatchLabels: lbl},
		Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox",
			Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "100m"}}}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	hpas := client.For[*v1.HorizontalPodAutoscaler](s.Client)
	if _, err := hpas.Create(ctx, &v1.HorizontalPodAutoscaler{Metadata: &v1.ObjectMeta{Name: "burn", Namespace: "default"}, Spec: &v1.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: &v1.CrossVersionObjectReference{ApiVersion: "apps/v1", Kind: "Deployment", Name: "burn"},
		MinReplicas:    proto.Int32(1), MaxReplicas: 4,
		Metrics: []*v1.MetricSpec{{Type: "Resource", Resource: &v1.ResourceMetricSource{Name: "cpu",
			Target: &v1.MetricTarget{Type: "Utilization", AverageUtilization: proto.Int32(50)}}}},
		Behavior: &v1.HorizontalPodAutoscalerBehavior{ScaleDown: &v1.HPAScalingRules{StabilizationWindowSeconds: proto.Int32(1)}},
	}}); err != nil {
		t.Fatal(err)
	}
	replicas := func(want int32, limited string) {
		t.Helper()
		wait.Eventually(t, 30*time.Second, fmt.Sprintf("%d replicas", want), func() error {
			dep, err := deps.Get(ctx, "default", "burn")
			if err != nil {
				return err
			}
			h, err := hpas.Get(ctx, "default", "burn")
			if err != nil {
				return err
			}
			st := h.GetStatus()
			active := controller.GetCondition(st.GetConditions(), "ScalingActive")
			lim := controller.GetCondition(st.GetConditions(), "ScalingLimited")
			if dep.Spec.GetReplicas() != want || dep.GetStatus().GetReadyReplicas() != want || active.GetStatus() != "True" ||
				lim.GetReason() != limited || len(st.GetCurrentMetrics()) != 1 {
				return fmt.Errorf("deployment %d/%d ready; autoscaler %v", dep.GetStatus().GetReadyReplicas(), dep.Spec.GetReplicas(), st)
			}
			return nil
		})
	}
	replicas(4, "TooManyReplicas") // 200% of request against a 50% target: 4 pods wanted per pod, capped at 4
	load.Store(false)
	replicas(1, "DesiredWithinRange")
	h, _ := hpas.Get(ctx, "default", "burn")
	if u := h.Status.CurrentMetrics[0].Resource.Current.GetAverageUtilization(); u != 5 {
		t.Errorf("utilization %d%%, want 5%%", u)
	}
}
