package tugctl

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/record"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// TestDescribeTroubleshooting: a node's pods with their share of its
// allocatable and the totals; a Service whose selector matches no pod
// says so; 50 restarts' BackOff events are one aggregated line.
func TestDescribeTroubleshooting(t *testing.T) {
	e := newEnv(t)
	readyNode(t, e, "n1", "True")
	setNodeStatus(t, e, "n1", &v1.NodeStatus{Allocatable: map[string]string{"cpu": "2", "memory": "4Gi", "pods": "110"},
		Conditions: []*v1.Condition{{Type: "Ready", Status: "False", Reason: "NetworkPluginNotReady", Message: "cni config missing"}}})
	for _, name := range []string{"a", "b"} {
		p := testPod(name, map[string]string{"app": "web"})
		p.Spec.Containers[0].Resources = &v1.ResourceRequirements{
			Requests: map[string]string{"cpu": "250m", "memory": "512Mi"}, Limits: map[string]string{"memory": "1Gi"}}
		mustCreate(t, e.c, p)
		if _, err := e.c.Bind(ctxT(t), "default", name, "n1", 0); err != nil {
			t.Fatal(err)
		}
	}
	r := mustOK(t, e.run("describe", "node", "n1"))
	assertContains(t, "describe node", r.out,
		"Ready False ", " NetworkPluginNotReady cni config missing\n",
		"Non-terminated Pods: (2 in total)\n Namespace Name CPU Requests CPU Limits Memory Requests Memory Limits Age\n",
		" default a 250m (12%) 0 (0%) 512Mi (12%) 1Gi (25%) ",
		"Allocated resources:\n (Total limits may be over 100 percent, i.e., overcommitted.)\n Resource Requests Limits\n -------- -------- ------\n cpu 500m (25%) 0 (0%)\n memory 1Gi (25%) 2Gi (50%)\n")

	mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "typo", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "wbe"}, Ports: []*v1.ServicePort{{Port: 80}}}})
	mustCreate(t, e.c, &v1.Service{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Port: 80}}}})
	r = mustOK(t, e.run("describe", "svc", "typo"))
	assertContains(t, "describe svc typo", r.out, "Endpoints: <none> (selector app=wbe matches no pod in namespace default; pods there have app=web)\n")
	r = mustOK(t, e.run("describe", "svc", "web"))
	assertContains(t, "describe svc web", r.out, "Endpoints: <none> (2 pod(s) match the selector, none is ready: a: starting; b: starting)\n")

	// 50 restarts: the kubelet records a BackOff per restart attempt, the
	// recorder aggregates them into one Event with count 50 (driven here
	// through the same recorder rather than 50 real back-offs, which would
	// take the 5-minute cap many times over).
	pod, err := client.For[*v1.Pod](e.c).Get(ctxT(t), "default", "a")
	if err != nil {
		t.Fatal(err)
	}
	rec := record.New(e.c, "kubelet", "n1", nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for i := 0; i < 50; i++ {
		rec.Eventf(pod, record.Warning, "BackOff", "Back-off restarting failed container c in pod a")
	}
	wait.Eventually(t, 30*time.Second, "50 aggregated BackOff events", func() error {
		evs, _, err := client.For[*v1.Event](e.c).List(ctxT(t), client.ListOptions{Namespace: "default", FieldSelector: "reason=BackOff"})
		if err != nil {
			return err
		}
		if len(evs) != 1 || evs[0].Count != 50 {
			var counts []int32
			for _, ev := range evs {
				counts = append(counts, ev.Count)
			}
			return fmt.Errorf("BackOff events with counts %v", counts)
		}
		return nil
	})
	r = mustOK(t, e.run("describe", "pod", "a"))
	if n := strings.Count(r.out, "BackOff"); n != 1 {
		t.Errorf("describe pod shows %d BackOff lines, want 1:\n%s", n, r.out)
	}
	assertContains(t, "describe pod a", r.out, " Warning BackOff ", " (x50 over ", " kubelet Back-off restarting failed container c in pod a\n")
}
