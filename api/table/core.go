package table

import (
	"cmp"
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// core is the tables of the core group (apiVersion v1).
var core = map[string]def{
	"Pod":       kindDef(podColumns, podCells),
	"Node":      kindDef(nodeColumns, nodeCells),
	"Namespace": kindDef(namespaceColumns, namespaceCells),
	"Service":   kindDef(serviceColumns, serviceCells),
	"Endpoints": kindDef(endpointsColumns, endpointsCells),
	"Event":     kindDef(eventColumns, eventCells),
	"ConfigMap": kindDef(configMapColumns, configMapCells),
	"Secret":    kindDef(secretColumns, secretCells),
}

var podColumns = []Column{
	nameColumn,
	{Name: "Ready", Type: "string", Description: "Ready containers out of the pod's containers."},
	{Name: "Status", Type: "string", Description: "The pod's phase, or why it is not running: a container's waiting or terminated reason, init progress, Terminating."},
	{Name: "Restarts", Type: "string", Description: "Restarts of the pod's containers, and how long ago the last one was."},
	ageColumn,
	{Name: "IP", Type: "string", Priority: 1, Description: "The pod's IP address."},
	{Name: "Node", Type: "string", Priority: 1, Description: "The node the pod is bound to."},
}

func podCells(p *v1.Pod, now time.Time) []any {
	ready, status, restarts := PodStatus(p, now)
	ready = fmt.Sprintf("%s/%d", ready, len(p.GetSpec().GetContainers()))
	return []any{p.Metadata.GetName(), ready, status, restarts, Age(p.Metadata.GetCreationTimestamp(), now),
		OrNone(p.GetStatus().GetPodIp()), OrNone(p.GetSpec().GetNodeName())}
}

var nodeColumns = []Column{
	nameColumn,
	{Name: "Status", Type: "string", Description: "Ready, NotReady or Unknown (the Ready condition), with SchedulingDisabled for a cordoned node."},
	{Name: "Roles", Type: "string", Description: "The node's roles, from its node-role.kubernetes.io/ROLE labels."},
	ageColumn,
	{Name: "Version", Type: "string", Description: "The kubelet's version."},
	{Name: "Internal-IP", Type: "string", Priority: 1, Description: "The node's InternalIP address."},
	{Name: "External-IP", Type: "string", Priority: 1, Description: "The node's ExternalIP address."},
	{Name: "OS-Image", Type: "string", Priority: 1, Description: "The operating system image the node reports."},
	{Name: "Kernel-Version", Type: "string", Priority: 1, Description: "The node's kernel version."},
	{Name: "Container-Runtime", Type: "string", Priority: 1, Description: "The node's container runtime and its version."},
}

func nodeCells(n *v1.Node, now time.Time) []any {
	info := n.GetStatus().GetNodeInfo()
	return []any{n.Metadata.GetName(), nodeStatus(n), NodeRoles(n), Age(n.Metadata.GetCreationTimestamp(), now), OrNone(info.GetKubeletVersion()),
		nodeAddress(n, "InternalIP"), nodeAddress(n, "ExternalIP"), OrNone(info.GetOsImage()), OrNone(info.GetKernelVersion()), OrNone(info.GetContainerRuntimeVersion())}
}

// nodeStatus is Ready, NotReady or Unknown, plus ",SchedulingDisabled".
func nodeStatus(n *v1.Node) string {
	var s string
	switch ConditionStatus(n.GetStatus().GetConditions(), "Ready") {
	case "True":
		s = "Ready"
	case "False":
		s = "NotReady"
	default:
		s = "Unknown"
	}
	if n.GetSpec().GetUnschedulable() {
		s += ",SchedulingDisabled"
	}
	return s
}

// NodeRoles are the X of node-role.kubernetes.io/X labels (and the value
// of kubernetes.io/role), comma-separated, or "<none>".
func NodeRoles(n *v1.Node) string {
	var roles []string
	for k, v := range n.GetMetadata().GetLabels() {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
			roles = append(roles, r)
		} else if k == "kubernetes.io/role" && v != "" {
			roles = append(roles, v)
		}
	}
	sort.Strings(roles)
	return OrNone(strings.Join(roles, ","))
}

func nodeAddress(n *v1.Node, typ string) string {
	for _, a := range n.GetStatus().GetAddresses() {
		if a.Type == typ {
			return a.Address
		}
	}
	return "<none>"
}

var namespaceColumns = []Column{
	nameColumn,
	{Name: "Status", Type: "string", Description: "The namespace's phase: Active or Terminating."},
	ageColumn,
}

func namespaceCells(n *v1.Namespace, now time.Time) []any {
	return []any{n.Metadata.GetName(), OrNone(n.GetStatus().GetPhase()), Age(n.Metadata.GetCreationTimestamp(), now)}
}

var serviceColumns = []Column{
	nameColumn,
	{Name: "Type", Type: "string", Description: "How the Service is exposed: ClusterIP, NodePort, LoadBalancer or ExternalName."},
	{Name: "Cluster-IP", Type: "string", Description: "The Service's virtual IP inside the cluster."},
	{Name: "External-IP", Type: "string", Description: "The load balancer's addresses (<pending> until assigned), or the external name."},
	{Name: "Port(s)", Type: "string", Description: "The Service's ports, with their node ports: 80:30007/TCP."},
	ageColumn,
	{Name: "Selector", Type: "string", Priority: 1, Description: "The labels of the pods the Service sends traffic to."},
}

func serviceCells(s *v1.Service, now time.Time) []any {
	sp := s.GetSpec()
	return []any{s.Metadata.GetName(), sp.GetType(), OrNone(sp.GetClusterIp()), ServiceExternalIP(s), ServicePorts(sp), Age(s.Metadata.GetCreationTimestamp(), now),
		LabelString(sp.GetSelector())}
}

// ServiceExternalIP is kubectl's EXTERNAL-IP: a LoadBalancer's addresses
// ("<pending>" before the load-balancer controller set them), an
// ExternalName's name, else "<none>".
func ServiceExternalIP(s *v1.Service) string {
	switch s.GetSpec().GetType() {
	case "ExternalName":
		return OrNone(s.GetSpec().GetExternalName())
	case "LoadBalancer":
		var addrs []string
		for _, in := range s.GetStatus().GetLoadBalancer().GetIngress() {
			addrs = append(addrs, cmp.Or(in.GetIp(), in.GetHostname()))
		}
		if len(addrs) == 0 {
			return "<pending>"
		}
		return strings.Join(addrs, ",")
	}
	return "<none>"
}

// ServicePorts is "80/TCP" or "80:30007/TCP", comma-separated, or "<none>".
func ServicePorts(sp *v1.ServiceSpec) string {
	var parts []string
	for _, p := range sp.GetPorts() {
		s := fmt.Sprint(p.Port)
		if p.NodePort != 0 {
			s += fmt.Sprintf(":%d", p.NodePort)
		}
		parts = append(parts, s+"/"+cmp.Or(p.Protocol, "TCP"))
	}
	return OrNone(strings.Join(parts, ","))
}

var endpointsColumns = []Column{
	nameColumn,
	{Name: "Endpoints", Type: "string", Description: "The ready addresses, ip:port, the first three of them."},
	ageColumn,
}

func endpointsCells(e *v1.Endpoints, now time.Time) []any {
	return []any{e.Metadata.GetName(), EndpointsList(e), Age(e.Metadata.GetCreationTimestamp(), now)}
}

// EndpointsList is the ENDPOINTS cell: the first three ready ip:port
// pairs and how many more there are ("a:80,b:80,c:80 + 2 more..."), or
// "<none>".
func EndpointsList(e *v1.Endpoints) string {
	var eps []string
	for _, s := range e.GetSubsets() {
		for _, a := range s.GetAddresses() {
			if len(s.GetPorts()) == 0 {
				eps = append(eps, a.Ip)
			}
			for _, p := range s.GetPorts() {
				eps = append(eps, fmt.Sprintf("%s:%d", a.Ip, p.Port))
			}
		}
	}
	if len(eps) == 0 {
		return "<none>"
	}
	cell := strings.Join(eps[:min(3, len(eps))], ",")
	if len(eps) > 3 {
		cell += fmt.Sprintf(" + %d more...", len(eps)-3)
	}
	return cell
}

var eventColumns = []Column{
	{Name: "Last Seen", Type: "string", Description: "Time since the event was last seen."},
	{Name: "Type", Type: "string", Description: "Normal or Warning."},
	{Name: "Reason", Type: "string", Description: "Why the event happened, in one CamelCase word."},
	{Name: "Object", Type: "string", Description: "The object the event is about, kind/name."},
	{Name: "Message", Type: "string", Description: "What happened, for a person."},
	{Name: "Source", Type: "string", Priority: 1, Description: "The component (and host) that reported the event."},
	{Name: "First Seen", Type: "string", Priority: 1, Description: "Time since the event was first seen."},
	{Name: "Count", Type: "integer", Priority: 1, Description: "How many times the event happened."},
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: "The Event object's name."},
}

// EventTime is when an event was last seen: its last timestamp, else its
// first, else its creation.
func EventTime(e *v1.Event) time.Time {
	for _, ts := range []*timestamppb.Timestamp{e.GetLastTimestamp(), e.GetFirstTimestamp(), e.GetMetadata().GetCreationTimestamp()} {
		if ts != nil {
			return ts.AsTime()
		}
	}
	return time.Time{}
}

func eventCells(e *v1.Event, now time.Time) []any {
	ref := e.GetInvolvedObject()
	obj := strings.ToLower(ref.GetKind()) + "/" + ref.GetName()
	src := e.GetSource().GetComponent()
	if h := e.GetSource().GetHost(); h != "" {
		src += ", " + h
	}
	last := "<unknown>"
	if t := EventTime(e); !t.IsZero() {
		last = HumanDuration(now.Sub(t))
	}
	return []any{last, e.Type, e.Reason, obj, e.Message,
		OrNone(src), Age(e.GetFirstTimestamp(), now), int64(e.Count), e.Metadata.GetName()}
}

var configMapColumns = []Column{
	nameColumn,
	{Name: "Data", Type: "integer", Description: "How many keys the config map holds (data and binaryData)."},
	ageColumn,
}

func configMapCells(c *v1.ConfigMap, now time.Time) []any {
	return []any{c.Metadata.GetName(), int64(len(c.Data) + len(c.BinaryData)), Age(c.Metadata.GetCreationTimestamp(), now)}
}

var secretColumns = []Column{
	nameColumn,
	{Name: "Type", Type: "string", Description: "The secret's type: Opaque, kubernetes.io/tls, bootstrap.kubernetes.io/token, ..."},
	{Name: "Data", Type: "integer", Description: "How many keys the secret holds."},
	ageColumn,
}

func secretCells(s *v1.Secret, now time.Time) []any {
	return []any{s.Metadata.GetName(), s.Type, int64(len(s.Data)), Age(s.Metadata.GetCreationTimestamp(), now)}
}
