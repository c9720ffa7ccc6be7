package tugctl

import (
	"fmt"
	"strings"
)

// readyHop: every container is ready (readiness probes pass).
func readyHop(in podTrace, node string) traceHop {
	p := in.pod
	h := traceHop{Hop: "ready", Title: "ready", Layer: layerKubelet, Component: "kubelet (probes)", Node: node}
	c := condition(p.GetStatus().GetConditions(), condReady)
	switch {
	case node == "" || c == nil:
		return h
	case p.GetStatus().GetPhase() == "Succeeded":
		h.Status, h.Title = hopSkipped, "ready (completed)"
		return h
	case c.Status == "True":
		h.Status, h.Time = hopDone, timeIfTrue(p.GetStatus().GetConditions(), condReady)
		return h
	}
	h.Reason, h.Message = c.Reason, c.Message
	if c.LastTransitionTime != nil {
		t := c.LastTransitionTime.AsTime()
		h.Time = &t
	}
	if c.Reason == "NodeNotReady" || p.GetStatus().GetPhase() == "Failed" {
		h.Status = hopFailed
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
				h.Status, h.Reason = hopFailed, "ReadinessProbeFailed"
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
func endpointHops(in podTrace) []traceHop {
	p := in.pod
	if len(in.services) == 0 {
		return []traceHop{{Hop: "endpoints", Title: "endpoints (no Service selects the pod)", Layer: layerEndpoints,
			Component: "controller-manager", Status: hopSkipped}}
	}
	ready := condition(p.GetStatus().GetConditions(), condReady).GetStatus() == "True"
	ip := p.GetStatus().GetPodIp()
	var out []traceHop
	for _, se := range in.services {
		name := se.svc.GetMetadata().GetName()
		h := traceHop{Hop: "endpoints", Title: "endpoints of service/" + name, Layer: layerEndpoints, Component: "controller-manager", Status: hopWaiting}
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
			h.Status = hopDone
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

// diagnosePod says where to look for the stuck hop h. A node that is not
// Ready explains any hop that waits on it.
func diagnosePod(in podTrace, h *traceHop) diagnosis {
	name, node := in.pod.GetMetadata().GetName(), in.pod.GetSpec().GetNodeName()
	d := diagnosis{layer: h.Layer, component: h.Component, reason: h.Reason, message: h.Message}
	switch h.Hop {
	case "scheduled":
		d.hint = "tugctl describe nodes (allocatable, taints, labels); tugctl get events --for pod/" + name
	case "kubelet":
		d.hint = "tugctl describe node " + node + "; the kubelet's log on " + node
	case "sandbox":
		d.hint = "tugctl describe node " + node + " (Ready condition); the CNI config in the kubelet's --cni-conf-dir on " + node
	case "images":
		d.hint = "tugctl image import IMAGE.tar --node " + node + " (or make the image's registry reachable from " + node + "); tugctl image ls --node " + node
	case "initialized", "started":
		d.hint = "tugctl describe pod " + name + "; tugctl logs " + name
	case "running":
		d.hint = "tugctl logs " + name + " --previous; tugctl describe pod " + name + " (probes, limits, exit codes)"
		if strings.HasSuffix(d.reason, "ProbeFailed") {
			d.component = "kubelet (probes)"
		}
		if d.reason == "Evicted" {
			d.hint = "tugctl describe node " + node + " (MemoryPressure, DiskPressure); its controller replaces the pod, a bare pod must be re-created"
		}
	case "ready":
		d.hint = "tugctl describe pod " + name + " (probe settings); tugctl logs " + name
	case "endpoints":
		d.hint = "tugctl describe service " + strings.TrimPrefix(h.Title, "endpoints of service/")
	}
	if node == "" {
		return d
	}
	var nodeReason, nodeMsg string
	if in.nodeMissing {
		nodeReason, nodeMsg = "NodeNotFound", "the pod is bound to node "+node+", which does not exist"
	} else if c := condition(in.node.GetStatus().GetConditions(), "Ready"); c.GetStatus() != "True" {
		nodeReason = orDefault(c.GetReason(), "NodeNotReady")
		nodeMsg = fmt.Sprintf("node %s is not Ready (Ready=%s): %s", node, orDefault(c.GetStatus(), "Unknown"), c.GetMessage())
	}
	if nodeReason == "" || (h.Status == hopFailed && h.Reason != "NodeNotReady" && h.Hop != "kubelet") {
		return d
	}
	d.reason, d.message = nodeReason, nodeMsg
	d.hint = "tugctl describe node " + node
	switch nodeReason {
	case "NetworkPluginNotReady":
		d.layer, d.component = layerCNI, "CNI"
		d.hint += "; the CNI config in the kubelet's --cni-conf-dir on " + node
	case "ContainerRuntimeNotReady":
		d.layer, d.component = layerKubelet, "containerd"
		d.hint += "; is containerd running on " + node + "?"
	default:
		d.layer, d.component = layerKubelet, "kubelet"
		d.hint += "; is the kubelet on " + node + " running and reaching the apiserver?"
	}
	return d
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
