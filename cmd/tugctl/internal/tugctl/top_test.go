package tugctl

import (
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
)

func TestTop(t *testing.T) {
	e := newEnv(t)
	readyNode(t, e, "n1", "True")
	setNodeStatus(t, e, "n1", &v1.NodeStatus{Allocatable: map[string]string{"cpu": "2", "memory": "4Gi"},
		Conditions: []*v1.Condition{{Type: "Ready", Status: "True"}}})
	readyNode(t, e, "n2", "Unknown")
	n1 := e.startFakeNode("n1")
	p := testPod("web", map[string]string{"app": "web"})
	p.Spec.Containers[0].Resources = &v1.ResourceRequirements{
		Requests: map[string]string{"cpu": "500m", "memory": "256Mi"}, Limits: map[string]string{"cpu": "1", "memory": "512Mi"}}
	p.Spec.Containers = append(p.Spec.Containers, &v1.Container{Name: "side", Image: "side:1"})
	mustCreate(t, e.c, p)
	if _, err := e.c.Bind(ctxT(t), "default", "web", "n1", 0); err != nil {
		t.Fatal(err)
	}
	setPodStatus(t, e.c, "web", &v1.PodStatus{Phase: "Running"})
	n1.set(func(n *fakeNode) {
		n.stats = &v1.StatsResponse{NodeName: "n1", Node: &v1.ResourceUsage{CpuMilli: 250, MemoryBytes: 1 << 30},
			Pods: []*v1.PodStats{{Namespace: "default", Name: "web", Usage: &v1.ResourceUsage{CpuMilli: 120, MemoryBytes: 64 << 20},
				Containers: map[string]*v1.ResourceUsage{"c": {CpuMilli: 100, MemoryBytes: 60 << 20}, "side": {CpuMilli: 20, MemoryBytes: 4 << 20}}}}}
	})

	r := mustOK(t, e.run("top", "nodes"))
	assertContains(t, "top nodes", r.out,
		"NAME CPU(cores) CPU% CPU REQUESTS CPU LIMITS MEMORY(bytes) MEMORY% MEMORY REQUESTS MEMORY LIMITS\n",
		"n1 250m 12% 500m (25%) 1 (50%) 1Gi 25% 256Mi (6%) 512Mi (12%)\n",
		"n2 <unknown> <unknown> 0 0 <unknown> <unknown> 0 0\n")
	r = mustOK(t, e.run("top", "no", "n1"))
	if strings.Contains(r.out, "n2") {
		t.Errorf("top no n1:\n%s", r.out)
	}
	r = mustOK(t, e.run("top", "pods"))
	assertContains(t, "top pods", r.out, "NAME CPU(cores) CPU REQUESTS CPU LIMITS MEMORY(bytes) MEMORY REQUESTS MEMORY LIMITS NODE\n",
		"web 120m 500m 1 64Mi 256Mi 512Mi n1\n")
	r = mustOK(t, e.run("top", "pods", "web", "--containers", "-A"))
	assertContains(t, "top pods --containers", r.out, "default web c 100m 500m 1 60Mi 256Mi 512Mi n1\n", "default web side 20m 0 0 4Mi 0 0 n1\n")
	// --sort-by puts the largest use first, unknown last; --no-headers
	// and -l.
	r = mustOK(t, e.run("top", "pods", "--containers", "--sort-by", "memory", "--no-headers", "-l", "app=web"))
	if rows := fieldsOf(r.out); len(rows) != 2 || rows[0][1] != "c" || rows[1][1] != "side" {
		t.Errorf("top pods --sort-by memory:\n%s", r.out)
	}
	r = mustOK(t, e.run("top", "nodes", "--sort-by=cpu", "--no-headers"))
	if rows := fieldsOf(r.out); len(rows) != 2 || rows[0][0] != "n1" || rows[1][0] != "n2" {
		t.Errorf("top nodes --sort-by cpu:\n%s", r.out)
	}
	r = mustOK(t, e.run("top", "pods", "-l", "app=other"))
	if strings.Contains(r.out, "web") {
		t.Errorf("top pods -l app=other:\n%s", r.out)
	}
	mustFail(t, e.run("top", "pods", "--sort-by", "disk"), `--sort-by "disk": want cpu or memory`)
	mustFail(t, e.run("top", "pods", "-l", "a in (b"), `-l "a in (b"`)
	mustFail(t, e.run("top", "nodes", "--containers"), "--containers: only with top pods")
	mustFail(t, e.run("top", "pods", "nope"), `no running pod "nope"`)
	mustFail(t, e.run("top", "deploy"), "want nodes or pods")
	mustFail(t, e.run("top", "nodes", "nope"), `nodes "nope" not found`)
}
