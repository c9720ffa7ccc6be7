package diagnose

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/table"
)

// readyHop: every container is ready (readiness probes pass).
func readyHop(in podTrace, node string) Hop {
	p := in.pod
	h := Hop{Hop: "ready", Title: "ready", Layer: LayerKubelet, Component: "kubelet (probes)", Node: node}
	c := table.Condition(p.GetStatus().GetConditions(), condReady)
	switch {
	case node == "" || c == nil:
		return h
	case p.GetStatus().GetPhase() == "Succeeded":
		h.Status, h.Title = HopSkipped, "ready (completed)"
		return h
	case c.Status == "True":
		h.Status, h.Time = HopDone, timeIfTrue(p.GetStatus().GetConditions(), condReady)
		return h
	}
	h.Reason, h.Message = c.Reason, c.Message
	if c.LastTransitionTime != nil {
		t := c.LastTransitionTime.AsTime()
		h.Time = &t
	}
	if c.Reason == "NodeNotReady" || p.GetStatus().GetPhase() == "Failed" {
		h.Status = HopFailed
		if p.GetStatus().GetReason() != "" {
			h.Reason, h.Message = p.GetStatus().GetReason(), p.GetStatus().GetMessage()
		}
		return h
	}
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if cs.Ready || cs.GetState().GetRunning() == nil {
			continue
		}
		for _, ctr := range p.GetSpec().GetContainers() {
			if ctr.Name == cs.Name && ctr.ReadinessProbe != nil {
				h.Status, h.Reason = HopFailed, "ReadinessProbeFailed"
				h.Message = fmt.Sprintf("container %s is running but its readiness probe fails", cs.Name)
				if e := lastEvent(in.events, "Unhealthy", "Readiness"); e != nil {
					h.Message = e.Message
				}
				return h
			}
		}
	}
	return h
}

// endpointHops: the pod's address is in the Endpoints of each Service
// selecting it.
func endpointHops(in podTrace) []Hop {
	p := in.pod
	if len(in.services) == 0 {
		return []Hop{{Hop: "endpoints", Title: "endpoints (no Service selects the pod)", Layer: LayerEndpoints,
			Component: "controller-manager", Status: HopSkipped}}
	}
	ready := table.Condition(p.GetStatus().GetConditions(), condReady).GetStatus() == "True"
	ip := p.GetStatus().GetPodIp()
	var out []Hop
	for _, se := range in.services {
		name := se.svc.GetMetadata().GetName()
		h := Hop{Hop: "endpoints", Title: "endpoints of service/" + name, Layer: LayerEndpoints, Component: "controller-manager", Status: HopWaiting}
		inReady, inNotReady := false, false
		for _, sub := range se.eps.GetSubsets() {
			for _, a := range sub.GetAddresses() {
				inReady = inReady || (ip != "" && a.GetIp() == ip)
			}
			for _, a := range sub.GetNotReadyAddresses() {
				inNotReady = inNotReady || (ip != "" && a.GetIp() == ip)
			}
		}
		switch {
		case inReady:
			h.Status = HopDone
		case inNotReady:
			h.Reason, h.Message = "NotReadyAddress", fmt.Sprintf("service/%s lists %s as not ready: connections do not go to it", name, ip)
		case ready:
			h.Reason = "NotInEndpoints"
			h.Message = fmt.Sprintf("the pod is Ready but service/%s's Endpoints do not list %s: is the controller-manager running?", name, ip)
		}
		out = append(out, h)
	}
	return out
}

// crictlPods is the crictl command that shows the pod's sandboxes in the
// runtime on its node (the kubelet's CRI backend).
func crictlPods(in podTrace) string {
	m := in.pod.GetMetadata()
	return "crictl pods --namespace " + cmp.Or(m.GetNamespace(), "default") + " --name " + m.GetName()
}

// diagnosePod says where to look for the stuck hop h. A node that is not
// Ready explains any hop that waits on it.
func diagnosePod(in podTrace, h *Hop) Finding {
	name, node := in.pod.GetMetadata().GetName(), in.pod.GetSpec().GetNodeName()
	d := Finding{Layer: h.Layer, Component: h.Component, Reason: h.Reason, Message: h.Message}
	switch h.Hop {
	case "scheduled":
		d.Next = "tugctl describe nodes (allocatable, taints, labels); tugctl get events --for pod/" + name
	case "kubelet":
		d.Next = "tugctl describe node " + node + "; the kubelet's log on " + node
	case "sandbox":
		d.Next = "tugctl describe node " + node + " (Ready condition); the CNI config in the kubelet's --cni-conf-dir on " + node +
			"; on " + node + ": " + crictlPods(in)
	case "images":
		d.Next = "tugctl image import IMAGE.tar --node " + node + " (or make the image's registry reachable from " + node + "); tugctl image ls --node " + node
	case "initialized", "started":
		d.Next = "tugctl describe pod " + name + "; tugctl logs " + name
		if h.Status == HopFailed {
			d.Next += "; on " + node + ": " + crictlPods(in) + ", then crictl ps -a --pod SANDBOX-ID"
		}
	case "running":
		d.Next = "tugctl logs " + name + " --previous; tugctl describe pod " + name + " (probes, limits, exit codes)"
		if strings.HasSuffix(d.Reason, "ProbeFailed") {
			d.Component = "kubelet (probes)"
		}
		if d.Reason == "Evicted" {
			d.Next = "tugctl describe node " + node + " (MemoryPressure, DiskPressure); its controller replaces the pod, a bare pod must be re-created"
		}
	case "ready":
		d.Next = "tugctl describe pod " + name + " (probe settings); tugctl logs " + name
	case "endpoints":
		d.Next = "tugctl describe service " + strings.TrimPrefix(h.Title, "endpoints of service/")
	}
	if node == "" {
		return d
	}
	var nodeReason, nodeMsg string
	if in.nodeMissing {
		nodeReason, nodeMsg = "NodeNotFound", "the pod is bound to node "+node+", which does not exist"
	} else if c := table.Condition(in.node.GetStatus().GetConditions(), "Ready"); c.GetStatus() != "True" {
		nodeReason = cmp.Or(c.GetReason(), "NodeNotReady")
		nodeMsg = fmt.Sprintf("node %s is not Ready (Ready=%s): %s", node, cmp.Or(c.GetStatus(), "Unknown"), c.GetMessage())
	}
	if nodeReason == "" || (h.Status == HopFailed && h.Reason != "NodeNotReady" && h.Hop != "kubelet") {
		return d
	}
	d.Reason, d.Message = nodeReason, nodeMsg
	d.Next = "tugctl describe node " + node
	switch nodeReason {
	case "NetworkPluginNotReady":
		d.Layer, d.Component = LayerCNI, "CNI"
		d.Next += "; the CNI config in the kubelet's --cni-conf-dir on " + node
	case "ContainerRuntimeNotReady":
		d.Layer, d.Component = LayerKubelet, "containerd"
		d.Next += "; is containerd running on " + node + "?"
	default:
		d.Layer, d.Component = LayerKubelet, "kubelet"
		d.Next += "; is the kubelet on " + node + " running and reaching the apiserver?"
	}
	return d
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
