package plugins

import (
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

func TestFilters(t *testing.T) {
	tests := []struct {
		name   string
		filter framework.FilterPlugin
		pod    *v1.Pod
		node   *framework.NodeInfo
		want   string
	}{
		{"ready node", NewNodeReady(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi")), "fits"},
		{"not ready node", NewNodeReady(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", notReady)), "node(s) were not ready"},
		{"node without conditions", NewNodeReady(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", func(n *v1.Node) { n.Status.Conditions = nil })), "node(s) were not ready"},
		{"not ready tolerated", NewNodeReady(), pod("p", "", "", withToleration(TaintNotReady, "Exists", "", "")), nodeInfo(node("n", "1", "1Gi", notReady)), "fits"},

		{"schedulable", NewNodeUnschedulable(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi")), "fits"},
		{"cordoned", NewNodeUnschedulable(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", cordoned)), "node(s) were unschedulable"},
		{"cordon tolerated", NewNodeUnschedulable(), pod("p", "", "", withToleration(TaintUnschedulable, "Exists", "", "NoSchedule")), nodeInfo(node("n", "1", "1Gi", cordoned)), "fits"},

		{"no taints", NewTaintToleration(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi")), "fits"},
		{"untolerated NoSchedule", NewTaintToleration(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", withTaint("dedicated", "gpu", "NoSchedule"))), "node(s) had untolerated taint {dedicated: gpu}"},
		{"untolerated NoExecute", NewTaintToleration(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", withTaint(TaintNotReady, "", "NoExecute"))), "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"},
		{"PreferNoSchedule never refuses", NewTaintToleration(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", withTaint("a", "b", "PreferNoSchedule"))), "fits"},
		{"tolerated by Equal", NewTaintToleration(), pod("p", "", "", withToleration("dedicated", "Equal", "gpu", "NoSchedule")), nodeInfo(node("n", "1", "1Gi", withTaint("dedicated", "gpu", "NoSchedule"))), "fits"},
		{"Equal with other value", NewTaintToleration(), pod("p", "", "", withToleration("dedicated", "Equal", "db", "NoSchedule")), nodeInfo(node("n", "1", "1Gi", withTaint("dedicated", "gpu", "NoSchedule"))), "node(s) had untolerated taint {dedicated: gpu}"},
		{"tolerated by Exists", NewTaintToleration(), pod("p", "", "", withToleration("dedicated", "Exists", "", "")), nodeInfo(node("n", "1", "1Gi", withTaint("dedicated", "gpu", "NoSchedule"))), "fits"},
		{"empty key Exists tolerates all", NewTaintToleration(), pod("p", "", "", withToleration("", "Exists", "", "")), nodeInfo(node("n", "1", "1Gi", withTaint("a", "b", "NoSchedule"), withTaint("c", "d", "NoExecute"))), "fits"},
		{"effect must match", NewTaintToleration(), pod("p", "", "", withToleration("dedicated", "Exists", "", "NoExecute")), nodeInfo(node("n", "1", "1Gi", withTaint("dedicated", "gpu", "NoSchedule"))), "node(s) had untolerated taint {dedicated: gpu}"},
		{"second taint untolerated", NewTaintToleration(), pod("p", "", "", withToleration("a", "Exists", "", "")), nodeInfo(node("n", "1", "1Gi", withTaint("a", "1", "NoSchedule"), withTaint("b", "2", "NoSchedule"))), "node(s) had untolerated taint {b: 2}"},

		{"no selector", NewNodeAffinity(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi")), "fits"},
		{"selector matches", NewNodeAffinity(), pod("p", "", "", withSelector("disk", "ssd")), nodeInfo(node("n", "1", "1Gi", withLabel("disk", "ssd"))), "fits"},
		{"selector mismatch", NewNodeAffinity(), pod("p", "", "", withSelector("disk", "ssd")), nodeInfo(node("n", "1", "1Gi", withLabel("disk", "hdd"))), "node(s) didn't match Pod's node affinity/selector"},
		{"selector label missing", NewNodeAffinity(), pod("p", "", "", withSelector("disk", "ssd")), nodeInfo(node("n", "1", "1Gi")), "node(s) didn't match Pod's node affinity/selector"},
		{"affinity In", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("zone", "In", "a", "b")})), nodeInfo(node("n", "1", "1Gi", withLabel("zone", "b"))), "fits"},
		{"affinity NotIn", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("zone", "NotIn", "a", "b")})), nodeInfo(node("n", "1", "1Gi", withLabel("zone", "b"))), "node(s) didn't match Pod's node affinity/selector"},
		{"affinity terms are ORed", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("zone", "In", "x")}, []*v1.LabelSelectorRequirement{expr("gpu", "Exists")})), nodeInfo(node("n", "1", "1Gi", withLabel("gpu", "1"))), "fits"},
		{"affinity expressions are ANDed", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("gpu", "Exists"), expr("zone", "In", "x")})), nodeInfo(node("n", "1", "1Gi", withLabel("gpu", "1"))), "node(s) didn't match Pod's node affinity/selector"},
		{"affinity DoesNotExist", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("spot", "DoesNotExist")})), nodeInfo(node("n", "1", "1Gi")), "fits"},
		{"affinity Gt", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("cores", "Gt", "8")})), nodeInfo(node("n", "1", "1Gi", withLabel("cores", "16"))), "fits"},
		{"affinity Lt fails", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("cores", "Lt", "8")})), nodeInfo(node("n", "1", "1Gi", withLabel("cores", "16"))), "node(s) didn't match Pod's node affinity/selector"},
		{"affinity Gt on non-number", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{expr("cores", "Gt", "8")})), nodeInfo(node("n", "1", "1Gi", withLabel("cores", "many"))), "node(s) didn't match Pod's node affinity/selector"},
		{"empty term matches nothing", NewNodeAffinity(), pod("p", "", "", withAffinity([]*v1.LabelSelectorRequirement{})), nodeInfo(node("n", "1", "1Gi")), "node(s) didn't match Pod's node affinity/selector"},
		{"selector and affinity both apply", NewNodeAffinity(), pod("p", "", "", withSelector("disk", "ssd"), withAffinity([]*v1.LabelSelectorRequirement{expr("zone", "Exists")})), nodeInfo(node("n", "1", "1Gi", withLabel("zone", "a"))), "node(s) didn't match Pod's node affinity/selector"},

		{"free port", NewNodePorts(), pod("p", "", "", withHostPort(80, "TCP", "")), nodeInfo(node("n", "1", "1Gi"), pod("q", "", "", withHostPort(81, "TCP", ""))), "fits"},
		{"port taken", NewNodePorts(), pod("p", "", "", withHostPort(80, "TCP", "")), nodeInfo(node("n", "1", "1Gi"), pod("q", "", "", withHostPort(80, "TCP", ""))), "node(s) didn't have free ports for the requested pod ports"},
		{"same port other protocol", NewNodePorts(), pod("p", "", "", withHostPort(53, "UDP", "")), nodeInfo(node("n", "1", "1Gi"), pod("q", "", "", withHostPort(53, "TCP", ""))), "fits"},
		{"same port other IPs", NewNodePorts(), pod("p", "", "", withHostPort(80, "TCP", "10.0.0.1")), nodeInfo(node("n", "1", "1Gi"), pod("q", "", "", withHostPort(80, "TCP", "10.0.0.2"))), "fits"},
		{"wildcard IP conflicts with any", NewNodePorts(), pod("p", "", "", withHostPort(80, "TCP", "10.0.0.1")), nodeInfo(node("n", "1", "1Gi"), pod("q", "", "", withHostPort(80, "TCP", ""))), "node(s) didn't have free ports for the requested pod ports"},
		{"host network uses container ports", NewNodePorts(), pod("p", "", "", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []*v1.ContainerPort{{ContainerPort: 80, Protocol: "TCP"}}
		}), nodeInfo(node("n", "1", "1Gi"), pod("q", "", "", withHostPort(80, "TCP", ""))), "node(s) didn't have free ports for the requested pod ports"},

		{"room for pods", NewMaxPods(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", maxPods("2")), pod("a", "", "")), "fits"},
		{"too many pods", NewMaxPods(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi", maxPods("2")), pod("a", "", ""), pod("b", "", "")), "Too many pods"},

		{"fits exactly", NewNodeResourcesFit(), pod("p", "500m", "512Mi"), nodeInfo(node("n", "1", "1Gi"), pod("a", "500m", "512Mi")), "fits"},
		{"insufficient cpu", NewNodeResourcesFit(), pod("p", "501m", "1Mi"), nodeInfo(node("n", "1", "1Gi"), pod("a", "500m", "512Mi")), "Insufficient cpu"},
		{"insufficient memory", NewNodeResourcesFit(), pod("p", "1m", "513Mi"), nodeInfo(node("n", "1", "1Gi"), pod("a", "500m", "512Mi")), "Insufficient memory"},
		{"insufficient both", NewNodeResourcesFit(), pod("p", "2", "2Gi"), nodeInfo(node("n", "1", "1Gi")), "Insufficient cpu; Insufficient memory"},
		{"no request always fits", NewNodeResourcesFit(), pod("p", "", ""), nodeInfo(node("n", "1", "1Gi"), pod("a", "1", "1Gi")), "fits"},
		{"limits count when requests are absent", NewNodeResourcesFit(), pod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Limits: map[string]string{"cpu": "2"}}
		}), nodeInfo(node("n", "1", "1Gi")), "Insufficient cpu"},
		{"init container larger than sum", NewNodeResourcesFit(), pod("p", "100m", "", func(p *v1.Pod) {
			p.Spec.InitContainers = []*v1.Container{{Name: "init", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "1500m"}}}}
		}), nodeInfo(node("n", "1", "1Gi")), "Insufficient cpu"},
		{"capacity used when allocatable is missing", NewNodeResourcesFit(), pod("p", "2", ""), nodeInfo(node("n", "1", "1Gi", func(n *v1.Node) {
			n.Status.Capacity = map[string]string{"cpu": "4"}
			delete(n.Status.Allocatable, "cpu")
		})), "fits"},
		{"insufficient ephemeral storage", NewNodeResourcesFit(), pod("p", "", "", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests["ephemeral-storage"] = "1Gi"
		}), nodeInfo(node("n", "1", "1Gi")), "Insufficient ephemeral-storage"},
	}
	for _, tt := range tests {
		t.Run(tt.filter.Name()+"/"+tt.name, func(t *testing.T) {
			got := describe(tt.filter.Filter(framework.NewPodInfo(tt.pod), tt.node))
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFiltersDoNotAllocate(t *testing.T) {
	filters, err := NewFilters(FilterNames())
	if err != nil {
		t.Fatal(err)
	}
	pi := framework.NewPodInfo(pod("p", "100m", "100Mi", withSelector("a", "b"), withHostPort(80, "TCP", "")))
	fit := nodeInfo(node("n", "4", "4Gi", withLabel("a", "b")), pod("q", "1", "1Gi", withHostPort(81, "TCP", "")))
	tainted := nodeInfo(node("t", "4", "4Gi", withLabel("a", "b"), withTaint("x", "y", "NoSchedule")))
	allocs := testing.AllocsPerRun(100, func() {
		for _, f := range filters {
			f.Filter(pi, fit)
			f.Filter(pi, tainted)
		}
	})
	if allocs != 0 {
		t.Errorf("filters allocate %v times per run, want 0", allocs)
	}
}

func TestRegistry(t *testing.T) {
	fs, err := NewFilters([]string{"NodeResourcesFit", "NodeReady", " "})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Name() != "NodeReady" || fs[1].Name() != "NodeResourcesFit" {
		t.Errorf("filters not in canonical order: %v", fs)
	}
	if _, err := NewFilters([]string{"Nope"}); err == nil {
		t.Error("unknown filter accepted")
	}
	ss, err := NewScores([]string{"LeastAllocated=3", "OwnerSpread"})
	if err != nil || len(ss) != 2 || ss[0].Weight != 3 || ss[1].Weight != 1 {
		t.Errorf("NewScores = %v, %v", ss, err)
	}
	for _, bad := range [][]string{{"Nope"}, {"LeastAllocated=0"}, {"LeastAllocated=x"}, {"OwnerSpread", "OwnerSpread"}} {
		if _, err := NewScores(bad); err == nil {
			t.Errorf("NewScores(%v) accepted", bad)
		}
	}
	if _, err := NewScores(DefaultScores()); err != nil {
		t.Errorf("default scores: %v", err)
	}
}
