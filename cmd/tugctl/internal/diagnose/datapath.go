package diagnose

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The datapath hop of a Service trace: each Ready node's kubelet tries the
// Service's ClusterIP ports from the node, and a few of each port's ready
// endpoints directly (NodeAPI CheckService: a probe, it reads nobody's
// rules). What the connections did, against the endpoints the API has,
// says which layer is at fault:
//
//	ClusterIP port        endpoints (direct)  ready  verdict
//	connected             -                   > 0    done
//	refused               -                   0      done: refused for want of an endpoint (the stop is at "endpoints")
//	connected             -                   0      DatapathStale: it still forwards to an endpoint that left
//	timeout/unreachable   -                   0      DatapathMissing: nothing refuses it (no datapath for it)
//	refused/timeout/...   one connects        > 0    DatapathRejects / DatapathMissing: the endpoint works, the datapath does not
//	refused               all refuse          > 0    EndpointsRefuse: nothing listens on the target port
//	timeout/unreachable   one does not answer > 0    EndpointsUnreachable: no way to the endpoint's pod (routes, CNI)
//	network unreachable   -                   any    EndpointsUnreachable: the pod tried from has no route (CNI)
//	UDP no-reply          none answers        > 0    done, noted: UDP has no handshake, silence proves nothing
//
// Probed endpoints are the first probedEndpoints ready ones of the port.
// The node tries from a running pod's network namespace (the path pods
// take); a node with no pod tries from its own, where "network is
// unreachable" only says the node has no route towards the Service CIDR
// (pods' packets are translated before they are routed): the hop is then
// unknown, not failed.

// probedEndpoints is how many of a port's ready endpoints a node connects
// to directly.
const probedEndpoints = 3

// Datapath reasons.
const (
	reasonDatapathStale        = "DatapathStale"
	reasonDatapathMissing      = "DatapathMissing"
	reasonDatapathRejects      = "DatapathRejects"
	reasonEndpointsRefuse      = "EndpointsRefuse"
	reasonEndpointsUnreachable = "EndpointsUnreachable"
)

// Connection results of v1.ConnectCheck (kubelet/server).
const (
	connConnected   = "connected"
	connRefused     = "refused"
	connUnreachable = "unreachable"
	connNoReply     = "no-reply"
	connNotProbed   = "not-probed"
)

// portEndpoints is one Service port and its ready endpoints.
type portEndpoints struct {
	port     *v1.ServicePort
	protocol string
	ready    []endpointTarget
}

// endpointTarget is one ready endpoint of a port: ip:port, and the pod and
// node it runs on (empty when unknown).
type endpointTarget struct {
	addr, pod, node string
}

func (e endpointTarget) String() string {
	s := e.addr
	switch {
	case e.pod != "" && e.node != "":
		s += fmt.Sprintf(" (%s on %s)", e.pod, e.node)
	case e.pod != "":
		s += " (" + e.pod + ")"
	}
	return s
}

// endpointsByPort pairs each port of the Service with the ready addresses
// of the Endpoints' subsets that serve it (matched by port name, as the
// endpoints controller writes them; an unnamed port is a Service's only
// one).
func endpointsByPort(svc *v1.Service, b *Backends) []portEndpoints {
	nodeOf := map[string]string{}
	for _, p := range b.Pods {
		nodeOf[p.GetMetadata().GetName()] = p.GetSpec().GetNodeName()
	}
	var out []portEndpoints
	for _, sp := range svc.GetSpec().GetPorts() {
		pe := portEndpoints{port: sp, protocol: cmp.Or(sp.Protocol, "TCP")}
		for _, sub := range b.Endpoints.GetSubsets() {
			for _, ep := range sub.GetPorts() {
				if ep.GetName() != sp.GetName() || !strings.EqualFold(cmp.Or(ep.GetProtocol(), "TCP"), pe.protocol) {
					continue
				}
				for _, a := range sub.GetAddresses() {
					t := endpointTarget{addr: fmt.Sprintf("%s:%d", a.GetIp(), ep.GetPort()), pod: a.GetTargetRef().GetName(), node: a.GetNodeName()}
					if t.node == "" {
						t.node = nodeOf[t.pod]
					}
					pe.ready = append(pe.ready, t)
				}
			}
		}
		out = append(out, pe)
	}
	return out
}

// datapathHop: from the node, the ClusterIP ports get through to the
// endpoints (or are refused when there is none).
func datapathHop(in serviceTrace, nc nodeCheck) Hop {
	ip := in.svc.GetSpec().GetClusterIp()
	h := Hop{Hop: "datapath", Title: "connects to " + ip, Layer: LayerProxy, Component: "proxy (datapath)", Node: nc.node, Status: HopDone}
	if nc.err != nil {
		h.Status, h.Message = HopUnknown, "could not ask the node: "+apierrors.FromGRPC(nc.err).Error()
		return h
	}
	checks := nc.resp.GetPorts()
	if len(checks) != len(in.ports) {
		h.Status = HopUnknown
		h.Message = fmt.Sprintf("node %s answered %d port check(s) for %d port(s): is its kubelet older than this tugctl?", nc.node, len(checks), len(in.ports))
		return h
	}
	from := nc.resp.GetSourcePod()
	if from != "" {
		h.Title += " from pod " + from
	}
	var notes []string
	for i, pc := range checks {
		v := judgePort(nc.node, from, ip, pc, in.ports[i].ready)
		switch {
		case v.unknown:
			h.Status, h.Message = HopUnknown, v.message
			return h
		case v.reason != "":
			h.Status, h.Reason, h.Message = HopFailed, v.reason, v.message
			h.Layer, h.Component = v.layer, v.component
			return h
		}
		notes = append(notes, v.note)
	}
	h.Title += ": " + strings.Join(notes, ", ")
	return h
}

// portVerdict is what one port's connections say: a note when all is
// well, else the reason, the layer and component at fault, and why; or,
// unknown, why they say nothing.
type portVerdict struct {
	note                              string
	reason, layer, component, message string
	unknown                           bool
}

// judgePort reads one port's check, made on node from pod fromPod's
// network namespace (empty: the node's own), against the port's ready
// endpoints (see the table above).
func judgePort(node, fromPod, ip string, pc *v1.ServicePortCheck, ready []endpointTarget) portVerdict {
	port := fmt.Sprintf("%d/%s", pc.GetPort(), pc.GetProtocol())
	target := fmt.Sprintf("%s:%s", ip, port)
	ci := pc.GetClusterIp()
	what := connectText(ci)
	datapath := func(reason, msg string, args ...any) portVerdict {
		return portVerdict{reason: reason, layer: LayerProxy, component: "proxy (datapath)", message: fmt.Sprintf(msg, args...)}
	}
	var accepting, refusing, silent []string // probed endpoints by outcome
	var firstSilent endpointTarget
	for j, e := range pc.GetEndpoints() {
		t := endpointTarget{addr: e.GetAddress()}
		if j < len(ready) && ready[j].addr == e.GetAddress() {
			t = ready[j]
		}
		switch e.GetResult() {
		case connConnected:
			accepting = append(accepting, t.String())
		case connRefused:
			refusing = append(refusing, t.String())
		case connNoReply, connNotProbed:
		default:
			if len(silent) == 0 {
				firstSilent = t
			}
			silent = append(silent, t.String()+" "+connectText(e))
		}
	}
	switch r := ci.GetResult(); {
	case fromPod == "" && r == connUnreachable && strings.Contains(ci.GetError(), "network is unreachable"):
		return portVerdict{unknown: true, message: fmt.Sprintf("node %s runs no pod to try %s from, and the node's own namespace has no route towards it (%s); pods' packets are translated before they are routed, so this says nothing about them",
			node, target, ci.GetError())}
	case r == connUnreachable && strings.Contains(ci.GetError(), "network is unreachable"):
		return portVerdict{reason: reasonEndpointsUnreachable, layer: LayerCNI, component: "CNI",
			message: fmt.Sprintf("pod %s on node %s has no route towards %s (%s): its pod network is broken", fromPod, node, target, ci.GetError())}
	case r == connNotProbed:
		return portVerdict{note: port + " not probed"}
	case len(ready) == 0 && r == connRefused:
		return portVerdict{note: port + " refused (no ready endpoint)"}
	case len(ready) == 0 && r == connConnected:
		return datapath(reasonDatapathStale, "node %s connects to %s, but the Service has no ready endpoint: its datapath still forwards to one that left", node, target)
	case len(ready) == 0:
		return datapath(reasonDatapathMissing, "%s on node %s: %s, though with no ready endpoint the datapath should refuse it at once: nothing handles the ClusterIP there", target, node, what)
	case r == connConnected:
		return portVerdict{note: fmt.Sprintf("%s connected (%dms)", port, ci.GetDurationMs())}
	case r == connNoReply && len(accepting) == 0:
		return portVerdict{note: port + " sent, no reply (UDP has no handshake: not conclusive)"}
	case len(accepting) > 0:
		reason := reasonDatapathMissing
		if r == connRefused {
			reason = reasonDatapathRejects
		}
		return datapath(reason, "%s on node %s: %s, but endpoint %s answers the node directly: the node's Service datapath does not forward to it",
			target, node, what, accepting[0])
	case len(pc.GetEndpoints()) == 0:
		reason := reasonDatapathMissing
		if r == connRefused {
			reason = reasonDatapathRejects
		}
		return datapath(reason, "%s on node %s: %s, though the Service has %d ready endpoint(s) (none was tried directly)", target, node, what, len(ready))
	case len(silent) > 0:
		if firstSilent.node == node {
			return portVerdict{reason: reasonEndpointsUnreachable, layer: LayerCNI, component: "CNI",
				message: fmt.Sprintf("%s on node %s: %s, and the node cannot reach its own pod's endpoint %s", target, node, what, silent[0])}
		}
		msg := fmt.Sprintf("%s on node %s: %s, and the node cannot reach the endpoint %s", target, node, what, silent[0])
		if firstSilent.node != "" {
			msg += fmt.Sprintf(": no way from %s to the pods of %s", node, firstSilent.node)
		}
		return portVerdict{reason: reasonEndpointsUnreachable, layer: LayerProxy, component: "proxy (routes)", message: msg}
	default:
		return portVerdict{reason: reasonEndpointsRefuse, layer: LayerEndpoints, component: "Service's targetPort",
			message: fmt.Sprintf("%s on node %s: %s, and so do its endpoints asked directly (%s refused): nothing listens on the target port; does the Service's targetPort match a port the container listens on?",
				target, node, what, strings.Join(refusing, ", "))}
	}
}

// connectText is a connection's outcome for a message: "refused
// (connection refused)", "timeout after 2000ms".
func connectText(c *v1.ConnectCheck) string {
	switch {
	case c.GetResult() == "":
		return "not tried"
	case c.GetResult() == "timeout":
		return fmt.Sprintf("timeout after %dms", c.GetDurationMs())
	case c.GetError() != "":
		return c.GetResult() + " (" + c.GetError() + ")"
	}
	return c.GetResult()
}

// datapathHint is what to look at next for a failed datapath hop.
func datapathHint(in serviceTrace, h *Hop) string {
	switch h.Reason {
	case reasonEndpointsRefuse:
		return "tugctl describe service " + in.name + " -n " + in.ns + " (targetPort); tugctl describe pod POD (its containers' ports)"
	case reasonEndpointsUnreachable:
		if h.Layer == LayerCNI {
			return "tugctl describe node " + h.Node + " (NetworkPluginNotReady?); the kubelet's log on " + h.Node
		}
		return "ip route on " + h.Node + " (a route to each node's pod CIDR via its InternalIP); the proxy's log on " + h.Node
	}
	return "is the proxy running on " + h.Node + "? its log and tugboat_proxy_sync_errors_total"
}
