package plugins

import (
	"strings"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/scheduler/framework"
)

// node builds a ready node with cpu, memory and pods allocatable, then
// applies the options.
func node(name, cpu, mem string, opts ...func(*v1.Node)) *v1.Node {
	n := &v1.Node{
		Metadata: &v1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec:     &v1.NodeSpec{},
		Status: &v1.NodeStatus{
			Allocatable: map[string]string{"cpu": cpu, "memory": mem, "pods": "110"},
			Conditions:  []*v1.Condition{{Type: "Ready", Status: "True"}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	return n
}

func nodeInfo(n *v1.Node, pods ...*v1.Pod) *framework.NodeInfo {
	ni := &framework.NodeInfo{Node: framework.NewNode(n)}
	for _, p := range pods {
		ni.AddPod(framework.NewPodInfo(p))
	}
	return ni
}

func withLabel(k, v string) func(*v1.Node) {
	return func(n *v1.Node) { n.Metadata.Labels[k] = v }
}

func withTaint(k, v, effect string) func(*v1.Node) {
	return func(n *v1.Node) { n.Spec.Taints = append(n.Spec.Taints, &v1.Taint{Key: k, Value: v, Effect: effect}) }
}

func notReady(n *v1.Node) { n.Status.Conditions[0].Status = "False" }

func cordoned(n *v1.Node) { n.Spec.Unschedulable = true }

func maxPods(p string) func(*v1.Node) {
	return func(n *v1.Node) { n.Status.Allocatable["pods"] = p }
}

// pod builds a one-container pod requesting cpu and memory ("" for none).
func pod(name, cpu, mem string, opts ...func(*v1.Pod)) *v1.Pod {
	req := map[string]string{}
	if cpu != "" {
		req["cpu"] = cpu
	}
	if mem != "" {
		req["memory"] = mem
	}
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{
			Name: "c", Image: "busybox", Resources: &v1.ResourceRequirements{Requests: req},
		}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withSelector(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func withToleration(key, op, value, effect string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, &v1.Toleration{Key: key, Operator: op, Value: value, Effect: effect})
	}
}

func withHostPort(port int32, proto, ip string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		c := p.Spec.Containers[0]
		c.Ports = append(c.Ports, &v1.ContainerPort{ContainerPort: 8080, HostPort: port, Protocol: proto, HostIp: ip})
	}
}

func withAffinity(terms ...[]*v1.LabelSelectorRequirement) func(*v1.Pod) {
	return func(p *v1.Pod) {
		ns := &v1.NodeSelector{}
		for _, t := range terms {
			ns.NodeSelectorTerms = append(ns.NodeSelectorTerms, &v1.NodeSelectorTerm{MatchExpressions: t})
		}
		p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: ns}}
	}
}

// withPreferred adds a preferred node affinity term.
func withPreferred(weight int32, reqs ...*v1.LabelSelectorRequirement) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &v1.Affinity{}
		}
		if p.Spec.Affinity.NodeAffinity == nil {
			p.Spec.Affinity.NodeAffinity = &v1.NodeAffinity{}
		}
		na := p.Spec.Affinity.NodeAffinity
		na.PreferredDuringSchedulingIgnoredDuringExecution = append(na.PreferredDuringSchedulingIgnoredDuringExecution,
			&v1.PreferredSchedulingTerm{Weight: weight, Preference: &v1.NodeSelectorTerm{MatchExpressions: reqs}})
	}
}

func expr(key, op string, values ...string) *v1.LabelSelectorRequirement {
	return &v1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func ownedBy(uid string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Metadata.OwnerReferences = []*v1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", Uid: uid, Controller: true}}
	}
}

// describe is the reasons of a status, or "fits".
func describe(s *framework.Status) string {
	if s == nil {
		return "fits"
	}
	return strings.Join(s.Reasons(), "; ")
}
