package statefulset_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
	"github.com/tugboat/tugboat/controllers/controller"
	"github.com/tugboat/tugboat/controllers/controller/controllertest"
	"github.com/tugboat/tugboat/controllers/statefulset"
	"github.com/tugboat/tugboat/controllers/volume"
	"github.com/tugboat/tugboat/scheduler"
)

// The docs' web StatefulSet of 3 with a volumeClaimTemplate on the default
// local-path class, with the real scheduler and the persistent volume
// controller: pods come up in order with stable names, hostnames and
// subdomain; each gets its claim bound to a volume made on its node;
// deleting web-1 brings web-1 back on the same node with the same claim;
// scaling to 1 removes web-2, then web-1; the claims remain.
func TestStatefulSet(t *testing.T) {
	s := apiservertest.Start(t)
	ctx := controllertest.Context(t, 2*time.Minute)
	d := controllertest.Deps(ctx, s.Client)
	sc, err := statefulset.New(d, statefulset.Config{})
	if err != nil {
		t.Fatal(err)
	}
	vc, err := volume.New(d, volume.Config{})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.StartCluster(t, s.Client, controllertest.ClusterOptions{Nodes: []string{"n1", "n2", "n3"}, NoScheduler: true, ReadyDelay: 100 * time.Millisecond})
	sched, err := scheduler.New(s.Client, scheduler.Config{Logger: controllertest.Logger(), Registry: prometheus.NewRegistry(),
		InitialBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	controllertest.RunAll(ctx, t, d.Informers, sc, vc, sched)

	var mu sync.Mutex
	var trace []string // "+web-0" when a pod appears, "ready web-0", "-web-2" when one starts going
	seen := map[string]string{}
	controllertest.ObservePods(ctx, t, s.Client, "default", func(pods []*v1.Pod) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range pods {
			n, state := p.Metadata.Name, "+"
			if controller.IsPodReady(p) {
				state = "ready "
			}
			if p.Metadata.DeletionTimestamp != nil {
				state = "-"
			}
			if seen[n] != state {
				seen[n] = state
				trace = append(trace, state+n)
			}
		}
	})
	lbl := map[string]string{"app": "nginx"}
	sets := client.For[*v1.StatefulSet](s.Client)
	if _, err := sets.Create(ctx, &v1.StatefulSet{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &v1.StatefulSetSpec{
		Replicas: proto.Int32(3), ServiceName: "nginx", Selector: &v1.LabelSelector{MatchLabels: lbl},
		Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: lbl}, Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "nginx", Image: "tugboat.local/echo:latest",
			VolumeMounts: []*v1.VolumeMount{{Name: "www", MountPath: "/usr/share/nginx/html"}}}}}},
		VolumeClaimTemplates: []*v1.PersistentVolumeClaim{{Metadata: &v1.ObjectMeta{Name: "www"}, Spec: &v1.PersistentVolumeClaimSpec{
			AccessModes: []string{"ReadWriteOnce"}, Resources: &v1.VolumeResourceRequirements{Requests: map[string]string{"storage": "1Gi"}}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	pods := client.For[*v1.Pod](s.Client)
	pvcs := client.For[*v1.PersistentVolumeClaim](s.Client)
	pvAPI := client.For[*v1.PersistentVolume](s.Client)
	ready := func(n int) map[string]string {
		t.Helper()
		nodes := map[string]string{}
		wait.Eventually(t, 30*time.Second, fmt.Sprintf("%d ready pods", n), func() error {
			list, _, err := pods.List(ctx, client.ListOptions{Namespace: "default"})
			if err != nil {
				return err
			}
			clear(nodes)
			for _, p := range list {
				if p.Metadata.DeletionTimestamp == nil && controller.IsPodReady(p) {
					nodes[p.Metadata.Name] = p.Spec.NodeName
				}
			}
			if len(nodes) != n || len(list) != n {
				return fmt.Errorf("%d pods, ready %v", len(list), nodes)
			}
			return nil
		})
		return nodes
	}
	nodes := ready(3)
	for i := range 3 {
		name := fmt.Sprintf("web-%d", i)
		p, err := pods.Get(ctx, "default", name)
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Hostname != name || p.Spec.Subdomain != "nginx" || p.Metadata.Labels[statefulset.PodNameLabel] != name {
			t.Errorf("%s: hostname %q subdomain %q labels %v", name, p.Spec.Hostname, p.Spec.Subdomain, p.Metadata.Labels)
		}
		claim, err := pvcs.Get(ctx, "default", "www-"+name)
		if err != nil || claim.Status.GetPhase() != "Bound" {
			t.Fatalf("claim of %s: %v %v", name, claim.GetStatus(), err)
		}
		pv, err := pvAPI.Get(ctx, "", claim.Spec.VolumeName)
		if err != nil {
			t.Fatal(err)
		}
		if got := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchFields[0].Values[0]; got != nodes[name] {
			t.Errorf("%s runs on %s but its volume is on %s", name, nodes[name], got)
		}
	}
	mu.Lock()
	order := append([]string(nil), trace...)
	mu.Unlock()
	if idx(order, "+web-1") < idx(order, "ready web-0") || idx(order, "+web-2") < idx(order, "ready web-1") {
		t.Errorf("pods not created in order: %v", order)
	}

	old, _ := pods.Get(ctx, "default", "web-1")
	if _, err := pods.Delete(ctx, "default", "web-1", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	wait.Eventually(t, 30*time.Second, "web-1 to come back", func() error {
		p, err := pods.Get(ctx, "default", "web-1")
		if err != nil {
			return err
		}
		if p.Metadata.Uid == old.Metadata.Uid || !controller.IsPodReady(p) {
			return fmt.Errorf("not yet replaced")
		}
		if p.Spec.NodeName != nodes["web-1"] {
			return fmt.Errorf("web-1 came back on %s, its volume is on %s", p.Spec.NodeName, nodes["web-1"])
		}
		return nil
	})

	mu.Lock()
	trace = nil
	mu.Unlock()
	if _, err := sets.Mutate(ctx, "default", "web", false, func(s *v1.StatefulSet) error { s.Spec.Replicas = proto.Int32(1); return nil }); err != nil {
		t.Fatal(err)
	}
	ready(1)
	mu.Lock()
	order = append([]string(nil), trace...)
	mu.Unlock()
	if i2, i1 := idx(order, "-web-2"), idx(order, "-web-1"); i2 < 0 || i1 < 0 || i1 < i2 {
		t.Errorf("scale down order %v, want web-2 removed before web-1", order)
	}
	list, _, err := pvcs.List(ctx, client.ListOptions{Namespace: "default"})
	if err != nil || len(list) != 3 {
		t.Errorf("%d claims after scaling down, want all 3 kept (%v)", len(list), err)
	}
}

func idx(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}
