package daemonset_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/daemonset"
	"github.com/tugboat/tugboat/scheduler"
)

// BenchmarkDaemonSetRollout100Nodes: a DaemonSet on 100 fake nodes (fake
// kubelets: pods Ready 10 ms after they are bound) with the real
// apiserver, scheduler and DaemonSet controller in one process; it
// reports the time until every node runs a ready pod, then the time of a
// rolling update with maxUnavailable 1 (Kubernetes' default: one node at
// a time) and with 10%.
//
//	go test -run '^$' -bench DaemonSetRollout -benchtime 1x ./controllers/daemonset/
func BenchmarkDaemonSetRollout100Nodes(b *testing.B) {
	const n = 100
	for range b.N {
		s := apiservertest.Start(b)
		ctx := controllertest.Context(b, 10*time.Minute)
		d := controllertest.Deps(ctx, s.Client)
		dc, err := daemonset.New(d, daemonset.Config{})
		if err != nil {
			b.Fatal(err)
		}
		var nodes []string
		for i := range n {
			nodes = append(nodes, fmt.Sprintf("n%03d", i))
		}
		controllertest.StartCluster(b, s.Client, controllertest.ClusterOptions{Nodes: nodes, NoScheduler: true,
			LeaseRenew: 5 * time.Second, ReadyDelay: 10 * time.Millisecond})
		sched, err := scheduler.New(s.Client, scheduler.Config{Logger: controllertest.Logger(), Registry: prometheus.NewRegistry(),
			InitialBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		controllertest.RunAll(ctx, b, d.Informers, dc, sched)
		dss := client.For[*v1.DaemonSet](s.Client)
		pods := client.For[*v1.Pod](s.Client)
		ds := newDaemonSet("agent")
		ds.Spec.UpdateStrategy = &v1.DaemonSetUpdateStrategy{Type: "RollingUpdate", RollingUpdate: &v1.RollingUpdateDaemonSet{MaxUnavailable: "1"}}
		// rolled waits until every node runs one ready pod of image.
		rolled := func(what, image string) time.Duration {
			start := time.Now()
			wait.Eventually(b, 9*time.Minute, what, func() error {
				list, _, err := pods.List(ctx, client.ListOptions{Namespace: "default", LabelSelector: "app=agent"})
				if err != nil {
					return err
				}
				ready := map[string]bool{}
				for _, p := range list {
					if p.GetMetadata().GetDeletionTimestamp() == nil && controller.IsPodReady(p) && p.GetSpec().GetContainers()[0].GetImage() == image {
						ready[p.GetSpec().GetNodeName()] = true
					}
				}
				if len(ready) != n || len(list) != n {
					return fmt.Errorf("%d of %d nodes ready at %s (%d pods)", len(ready), n, image, len(list))
				}
				return nil
			})
			return time.Since(start)
		}
		if _, err := dss.Create(ctx, ds); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rolled("first pods", "tugboat.local/busybox:latest").Seconds(), "s-to-100-ready")
		for _, step := range []struct{ maxUnavailable, image, metric string }{
			{"1", "tugboat.local/busybox:v2", "s-rollout-maxUnavailable-1"},
			{"10%", "tugboat.local/busybox:v3", "s-rollout-maxUnavailable-10%"},
		} {
			if _, err := dss.Mutate(ctx, "default", "agent", false, func(ds *v1.DaemonSet) error {
				ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = step.maxUnavailable
				ds.Spec.Template.Spec.Containers[0].Image = step.image
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(rolled("rolled to "+step.image, step.image).Seconds(), step.metric)
		}
	}
}
