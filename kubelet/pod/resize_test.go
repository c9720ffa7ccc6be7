package pod

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func resizePod(name string) *v1.Pod {
	p := newPod(name, "app")
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{
		Requests: map[string]string{"cpu": "100m", "memory": "32Mi"},
		Limits:   map[string]string{"cpu": "200m", "memory": "64Mi"},
	}
	return p
}

// resized is pod with the app container's requests and limits replaced.
func resized(pod *v1.Pod, req, lim map[string]string) *v1.Pod {
	p := proto.Clone(pod).(*v1.Pod)
	p.Metadata.ResourceVersion++
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: req, Limits: lim}
	return p
}

func TestResizeInPlace(t *testing.T) {
	e := newTestEnv(t)
	e.m.cfg.Allocatable = func() map[string]string { return map[string]string{"cpu": "2", "memory": "1Gi"} }
	pod := resizePod("r")
	w := e.worker(pod)
	e.sync(w)
	id := e.rt.running()[0].ID
	cs := containerState(w.status, "app")
	if cs.GetResources().GetLimits()["cpu"] != "200m" || cs.GetAllocatedResources()["memory"] != "32Mi" {
		t.Fatalf("before: resources %v allocated %v", cs.GetResources(), cs.GetAllocatedResources())
	}

	w.update(resized(pod, map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "500m", "memory": "128Mi"}))
	e.sync(w)
	if got := e.rt.running(); len(got) != 1 || got[0].ID != id {
		t.Fatalf("running after the resize: %v, want %s still", got, id)
	}
	if res := e.rt.containers[id].cfg.Resources; res.CPULimitMilli != 500 || res.MemoryLimitBytes != 128<<20 || res.CPURequestMilli != 100 {
		t.Errorf("the container's cgroup settings: %+v", res)
	}
	cs = containerState(w.status, "app")
	if cs.RestartCount != 0 || cs.GetResources().GetLimits()["memory"] != "128Mi" || cs.GetResources().GetLimits()["cpu"] != "500m" {
		t.Errorf("after: restarts %d resources %v", cs.RestartCount, cs.GetResources())
	}
	if condition(w.status, CondPodResizePending) != "" || condition(w.status, CondPodResizeInProgress) != "" {
		t.Errorf("conditions after a resize that completed: %v", w.status.Conditions)
	}
	if !e.rec.has("ResizeCompleted") {
		t.Errorf("no ResizeCompleted event")
	}
}

func TestResizeInfeasibleAndDeferred(t *testing.T) {
	e := newTestEnv(t)
	e.m.cfg.Allocatable = func() map[string]string { return map[string]string{"cpu": "1", "memory": "1Gi"} }
	a := resizePod("a")
	wa := e.worker(a)
	e.sync(wa)
	b := resizePod("b")
	b.Spec.Containers[0].Resources.Requests["cpu"] = "700m"
	b.Spec.Containers[0].Resources.Limits["cpu"] = "700m"
	wb := e.worker(b)
	e.sync(wb)

	wa.update(resized(a, map[string]string{"cpu": "2", "memory": "32Mi"}, map[string]string{"cpu": "2", "memory": "64Mi"}))
	e.sync(wa)
	c := findCondition(wa.status.Conditions, CondPodResizePending)
	if c == nil || c.Status != "True" || c.Reason != ReasonInfeasible || c.Message != "Node didn't have enough capacity: cpu, requested: 2000, capacity: 1000" {
		t.Fatalf("PodResizePending %v", c)
	}
	if cs := containerState(wa.status, "app"); cs.GetAllocatedResources()["cpu"] != "100m" || cs.GetResources().GetLimits()["cpu"] != "200m" {
		t.Errorf("an infeasible resize changed allocated %v or actual %v", cs.GetAllocatedResources(), cs.GetResources())
	}

	// 500m fits the node, not beside b's 700m.
	wa.update(resized(a, map[string]string{"cpu": "500m", "memory": "32Mi"}, map[string]string{"cpu": "500m", "memory": "64Mi"}))
	e.sync(wa)
	c = findCondition(wa.status.Conditions, CondPodResizePending)
	if c == nil || c.Reason != ReasonDeferred || !strings.Contains(c.Message, "Node didn't have enough resource: cpu, requested: 500, used: 700, capacity: 1000") {
		t.Fatalf("PodResizePending %v", c)
	}
	// b shrinks: a's resize goes ahead on its next sync.
	wb.update(resized(b, map[string]string{"cpu": "300m", "memory": "32Mi"}, map[string]string{"cpu": "300m", "memory": "64Mi"}))
	e.sync(wb)
	e.sync(wa)
	if c := findCondition(wa.status.Conditions, CondPodResizePending); c != nil {
		t.Fatalf("still pending: %v", c)
	}
	if cs := containerState(wa.status, "app"); cs.GetAllocatedResources()["cpu"] != "500m" || cs.GetResources().GetLimits()["cpu"] != "500m" {
		t.Errorf("after the deferred resize: allocated %v actual %v", cs.GetAllocatedResources(), cs.GetResources())
	}
}

func TestResizeRestartContainer(t *testing.T) {
	e := newTestEnv(t)
	pod := resizePod("rc")
	pod.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "NotRequired"}, {ResourceName: "memory", RestartPolicy: "RestartContainer"}}
	w := e.worker(pod)
	e.sync(w)
	first := e.rt.running()[0].ID

	// cpu only: in place.
	next := resized(pod, map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "300m", "memory": "64Mi"})
	w.update(next)
	e.sync(w)
	if got := e.rt.running(); len(got) != 1 || got[0].ID != first {
		t.Fatalf("a cpu resize with NotRequired restarted the container: %v", got)
	}
	// memory: restarted with the new limit.
	w.update(resized(next, map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "300m", "memory": "96Mi"}))
	for i := 0; i < 3; i++ {
		e.sync(w)
	}
	got := e.rt.running()
	if len(got) != 1 || got[0].ID == first {
		t.Fatalf("a memory resize with RestartContainer: running %v", got)
	}
	if res := e.rt.containers[got[0].ID].cfg.Resources; res.MemoryLimitBytes != 96<<20 || res.CPULimitMilli != 300 {
		t.Errorf("the new attempt's resources %+v", res)
	}
	if cs := containerState(w.status, "app"); cs.RestartCount != 1 || cs.GetResources().GetLimits()["memory"] != "96Mi" {
		t.Errorf("restarts %d resources %v", cs.RestartCount, cs.GetResources())
	}
}
