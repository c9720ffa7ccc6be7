package diagnose

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

var traceT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func at(sec float64) *timestamppb.Timestamp {
	return timestamppb.New(traceT0.Add(time.Duration(sec * float64(time.Second))))
}

func cond(typ, status string, sec float64, reason, msg string) *v1.Condition {
	return &v1.Condition{Type: typ, Status: status, LastTransitionTime: at(sec), Reason: reason, Message: msg}
}

// startedConds are the conditions of a pod that got as far as started.
func startedConds() []*v1.Condition {
	return []*v1.Condition{
		cond("PodScheduled", "True", 0.1, "", ""), cond("tugboat.io/Accepted", "True", 0.2, "", ""),
		cond("PodReadyToStartContainers", "True", 0.5, "", ""), cond("tugboat.io/ImagesReady", "True", 0.7, "", ""),
		cond("Initialized", "True", 0.7, "", ""), cond("tugboat.io/ContainersStarted", "True", 0.9, "", ""),
	}
}

func tracePodFixture(mod func(p *v1.Pod, in *podTrace)) *Report {
	p := &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default", Uid: "u1", CreationTimestamp: at(0), Labels: map[string]string{"app": "web"}},
		Spec: &v1.PodSpec{NodeName: "node2", Containers: []*v1.Container{{Name: "c", Image: "app:1",
			ReadinessProbe: &v1.Probe{HttpGet: &v1.HTTPGetAction{Path: "/", Port: "80"}}}}},
		Status: &v1.PodStatus{Phase: "Running", PodIp: "10.244.2.5", Conditions: append(startedConds(),
			cond("ContainersReady", "True", 1.5, "", ""), cond("Ready", "True", 1.5, "", "")),
			ContainerStatuses: []*v1.ContainerStatus{{Name: "c", Ready: true, State: &v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(0.9)}}}}},
	}
	node := &v1.Node{Metadata: &v1.ObjectMeta{Name: "node2"}, Status: &v1.NodeStatus{Conditions: []*v1.Condition{cond("Ready", "True", 0, "KubeletReady", "")}}}
	in := podTrace{pod: p, node: node, now: traceT0.Add(time.Minute), services: []serviceEndpoints{{
		svc: &v1.Service{Metadata: &v1.ObjectMeta{Name: "web"}},
		eps: &v1.Endpoints{Subsets: []*v1.EndpointSubset{{Addresses: []*v1.EndpointAddress{{Ip: "10.244.2.5"}}}}},
	}}}
	if mod != nil {
		mod(p, &in)
	}
	return buildPodTrace(in)
}

func setCond(p *v1.Pod, c *v1.Condition) {
	for i, x := range p.Status.Conditions {
		if x.Type == c.Type {
			p.Status.Conditions[i] = c
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, c)
}

func dropConds(p *v1.Pod, keep int) {
	p.Status.Conditions = p.Status.Conditions[:keep]
}

func waitingStatus(reason, msg string, restarts int32, last *v1.ContainerStateTerminated) []*v1.ContainerStatus {
	return []*v1.ContainerStatus{{Name: "c", RestartCount: restarts,
		State:     &v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}},
		LastState: &v1.ContainerState{Terminated: last}}}
}

func TestBuildPodTrace(t *testing.T) {
	event := func(reason, msg string) *v1.Event {
		return &v1.Event{Reason: reason, Message: msg, LastTimestamp: at(30)}
	}
	cases := []struct {
		name                            string
		mod                             func(p *v1.Pod, in *podTrace)
		ok                              bool
		stuck, layer, reason, component string
		message                         string
	}{
		{name: "healthy", ok: true},
		{name: "insufficient cpu", mod: func(p *v1.Pod, in *podTrace) {
			p.Spec.NodeName, in.node = "", nil
			p.Status = &v1.PodStatus{Phase: "Pending", Conditions: []*v1.Condition{cond("PodScheduled", "False", 0.1, "Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")}}
		}, stuck: "scheduled", layer: "scheduler", reason: "Unschedulable", component: "scheduler", message: "3 Insufficient cpu"},
		{name: "no scheduler", mod: func(p *v1.Pod, in *podTrace) {
			p.Spec.NodeName, in.node = "", nil
			p.Status = &v1.PodStatus{Phase: "Pending"}
		}, stuck: "scheduled", layer: "scheduler", reason: "NotScheduledYet", component: "scheduler"},
		{name: "kubelet never saw it, node down", mod: func(p *v1.Pod, in *podTrace) {
			p.Status = &v1.PodStatus{Phase: "Pending", Conditions: []*v1.Condition{cond("PodScheduled", "True", 0.1, "", "")}}
			in.node.Status.Conditions = []*v1.Condition{cond("Ready", "Unknown", 10, "NodeStatusUnknown", "Kubelet stopped posting node status.")}
		}, stuck: "kubelet", layer: "kubelet+runtime", reason: "NodeStatusUnknown", component: "kubelet", message: "Kubelet stopped posting"},
		{name: "image not on the node", mod: func(p *v1.Pod, in *podTrace) {
			dropConds(p, 3)
			setCond(p, cond("tugboat.io/ImagesReady", "False", 0.6, "ErrImageNeverPull", `Container image "app:1" is not present with pull policy of Never`))
		}, stuck: "images", layer: "kubelet+runtime", reason: "ErrImageNeverPull", component: "kubelet", message: "not present"},
		{name: "CNI broken", mod: func(p *v1.Pod, in *podTrace) {
			dropConds(p, 2)
			setCond(p, cond("PodReadyToStartContainers", "False", 0.3, "NetworkNotReady", "network plugin not ready: no-such-plugin"))
			in.node.Status.Conditions = []*v1.Condition{cond("Ready", "False", 0, "NetworkPluginNotReady", "container runtime network not ready")}
		}, stuck: "sandbox", layer: "CNI", reason: "NetworkNotReady", component: "CNI", message: "no-such-plugin"},
		{name: "sandbox being made", mod: func(p *v1.Pod, in *podTrace) {
			dropConds(p, 2)
			setCond(p, cond("PodReadyToStartContainers", "False", 0.3, "SandboxNotReady", "the pod's sandbox is being created"))
		}, stuck: "sandbox", layer: "CNI", reason: "SandboxNotReady", component: "CNI"},
		{name: "crash loop", mod: func(p *v1.Pod, in *podTrace) {
			setCond(p, cond("Ready", "False", 5, "ContainersNotReady", "containers with unready status: [c]"))
			p.Status.ContainerStatuses = waitingStatus("CrashLoopBackOff", "back-off 8s restarting failed container=c", 4,
				&v1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", FinishedAt: at(50)})
		}, stuck: "running", layer: "kubelet+runtime", reason: "CrashLoopBackOff", component: "runtime", message: "exits with code 3"},
		{name: "liveness", mod: func(p *v1.Pod, in *podTrace) {
			p.Status.ContainerStatuses[0].RestartCount = 2
			p.Status.ContainerStatuses[0].LastState = &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: at(40)}}
			in.events = []*v1.Event{event("Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500"),
				event("Killing", "Container c failed liveness probe, will be restarted")}
		}, stuck: "running", layer: "kubelet+runtime", reason: "LivenessProbeFailed", component: "kubelet (probes)", message: "statuscode: 500"},
		{name: "old restart is fine", ok: true, mod: func(p *v1.Pod, in *podTrace) {
			p.Status.ContainerStatuses[0].RestartCount = 1
			p.Status.ContainerStatuses[0].LastState = &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: at(1)}}
			in.now = traceT0.Add(time.Hour)
		}},
		{name: "readiness", mod: func(p *v1.Pod, in *podTrace) {
			setCond(p, cond("Ready", "False", 5, "ContainersNotReady", "containers with unready status: [c]"))
			p.Status.ContainerStatuses[0].Ready = false
			in.services[0].eps = &v1.Endpoints{Subsets: []*v1.EndpointSubset{{NotReadyAddresses: []*v1.EndpointAddress{{Ip: "10.244.2.5"}}}}}
			in.events = []*v1.Event{event("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503")}
		}, stuck: "ready", layer: "kubelet+runtime", reason: "ReadinessProbeFailed", component: "kubelet (probes)", message: "statuscode: 503"},
		{name: "node went away while running", mod: func(p *v1.Pod, in *podTrace) {
			setCond(p, cond("Ready", "False", 20, "NodeNotReady", "the node is unreachable"))
			in.node.Status.Conditions = []*v1.Condition{cond("Ready", "Unknown", 20, "NodeStatusUnknown", "Kubelet stopped posting node status.")}
		}, stuck: "ready", layer: "kubelet+runtime", reason: "NodeStatusUnknown", component: "kubelet"},
		{name: "ready but not in endpoints", mod: func(p *v1.Pod, in *podTrace) {
			in.services[0].eps = nil
		}, stuck: "endpoints", layer: "endpoints", reason: "NotInEndpoints", component: "controller-manager"},
		{name: "no service", ok: true, mod: func(p *v1.Pod, in *podTrace) { in.services = nil }},
		{name: "evicted", mod: func(p *v1.Pod, in *podTrace) {
			p.Status.Phase, p.Status.Reason = "Failed", "Evicted"
			p.Status.Message = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."
			setCond(p, cond("Ready", "False", 50, "PodCompleted", ""))
			setCond(p, cond("PodReadyToStartContainers", "False", 51, "PodCompleted", "the pod's sandbox and network were released"))
			p.Status.ContainerStatuses = []*v1.ContainerStatus{{Name: "c", State: &v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: at(50)}}}}
		}, stuck: "running", layer: "kubelet+runtime", reason: "Evicted", component: "kubelet", message: "low on resource: memory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := tracePodFixture(c.mod)
			got := []string{r.StuckAt, r.Layer, r.Reason, r.Component}
			want := []string{c.stuck, c.layer, c.reason, c.component}
			if r.OK != c.ok || strings.Join(got, "|") != strings.Join(want, "|") || !strings.Contains(r.Message, c.message) {
				t.Errorf("ok=%v stuck|layer|reason|component = %q, message %q\nwant ok=%v %q, message with %q\nhops: %+v",
					r.OK, got, r.Message, c.ok, want, c.message, r.Hops)
			}
		})
	}

	// A pod stuck in the runtime layer: the crictl command that shows it
	// on its node.
	stuck := tracePodFixture(func(p *v1.Pod, in *podTrace) {
		dropConds(p, 2)
		setCond(p, cond("PodReadyToStartContainers", "False", 0.3, "FailedCreatePodSandbox", "sandbox image not present on node"))
	})
	if want := "crictl pods --namespace default --name "; !strings.Contains(stuck.Next, want) {
		t.Errorf("hint for a pod stuck at its sandbox %q lacks %q", stuck.Next, want)
	}

	// Times and the gaps between hops come from the conditions.
	r := tracePodFixture(nil)
	var ids []string
	for _, h := range r.Hops {
		ids = append(ids, h.Hop)
	}
	if got := strings.Join(ids, " "); got != "accepted scheduled kubelet sandbox images started running ready endpoints" {
		t.Errorf("hops: %s", got)
	}
	if h := r.Hops[3]; h.Title != "sandbox and IP 10.244.2.5" || h.SincePrevious == nil || *h.SincePrevious < 0.29 || *h.SincePrevious > 0.31 {
		t.Errorf("sandbox hop: %+v", h)
	}
}
