package console

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/allocation"
)

// The summaries are what the page draws: a few fields per object, so a
// snapshot of 5,000 pods stays small. Field names are short and stable
// (assets/app.js reads them).

// owner is an object's controller (ownerReference with controller=true).
type owner struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func controllerOf(m *v1.ObjectMeta) *owner {
	for _, r := range m.GetOwnerReferences() {
		if r.GetController() {
			return &owner{Kind: r.GetKind(), Name: r.GetName()}
		}
	}
	return nil
}

// podSummary is a pod's chip: what the page shows of it and filters
// by, nothing more (5,000 of them are one snapshot).
type podSummary struct {
	Namespace string            `json:"ns"`
	Name      string            `json:"name"`
	Node      string            `json:"node,omitempty"`
	Phase     string            `json:"phase"`
	Status    string            `json:"status"` // the STATUS column of tugctl get pods
	Ready     string            `json:"ready"`  // "1/2"
	IsReady   bool              `json:"isReady"`
	IP        string            `json:"ip,omitempty"`
	Restarts  string            `json:"restarts,omitempty"`
	Owner     *owner            `json:"owner,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Deleting  bool              `json:"deleting,omitempty"`
	CPU       int64             `json:"cpu,omitempty"` // requests, millicores
	Memory    int64             `json:"mem,omitempty"` // requests, bytes
}

func summarizePod(p *v1.Pod, now time.Time) podSummary {
	m := p.GetMetadata()
	ready, status, restarts := table.PodStatus(p, now)
	r := allocation.Pod(p)
	if restarts == "0" {
		restarts = ""
	}
	return podSummary{
		Namespace: m.GetNamespace(), Name: m.GetName(), Node: p.GetSpec().GetNodeName(),
		Phase: p.GetStatus().GetPhase(), Status: status, Ready: ready,
		IsReady: table.ConditionStatus(p.GetStatus().GetConditions(), "Ready") == "True",
		IP:      p.GetStatus().GetPodIp(), Restarts: restarts, Owner: controllerOf(m), Labels: m.GetLabels(),
		Deleting: m.GetDeletionTimestamp() != nil,
		CPU:      r.CPURequest, Memory: r.MemoryRequest,
	}
}

type nodeSummary struct {
	Name          string            `json:"name"`
	Ready         string            `json:"ready"` // True, False, Unknown
	Pressure      []string          `json:"pressure,omitempty"`
	Taints        []string          `json:"taints,omitempty"`
	Unschedulable bool              `json:"unschedulable,omitempty"`
	PodCIDR       string            `json:"podCIDR,omitempty"`
	IP            string            `json:"ip,omitempty"`
	CPU           int64             `json:"cpu"` // allocatable, millicores
	Memory        int64             `json:"mem"` // allocatable, bytes
	Labels        map[string]string `json:"labels,omitempty"`
}

func summarizeNode(n *v1.Node) nodeSummary {
	s := nodeSummary{Name: n.GetMetadata().GetName(), Ready: "Unknown", PodCIDR: n.GetSpec().GetPodCidr(),
		Unschedulable: n.GetSpec().GetUnschedulable(), Labels: n.GetMetadata().GetLabels()}
	s.CPU, s.Memory = allocation.Allocatable(n)
	for _, c := range n.GetStatus().GetConditions() {
		switch {
		case c.Type == "Ready":
			s.Ready = c.Status
		case strings.HasSuffix(c.Type, "Pressure") && c.Status == "True":
			s.Pressure = append(s.Pressure, c.Type)
		}
	}
	for _, t := range n.GetSpec().GetTaints() {
		v := t.Key
		if t.Value != "" {
			v += "=" + t.Value
		}
		s.Taints = append(s.Taints, v+":"+t.Effect)
	}
	for _, a := range n.GetStatus().GetAddresses() {
		if a.Type == "InternalIP" {
			s.IP = a.Address
		}
	}
	return s
}

// workloadSummary is a Deployment, ReplicaSet, StatefulSet, DaemonSet
// or Job.
type workloadSummary struct {
	Kind      string    `json:"kind"`
	Namespace string    `json:"ns"`
	Name      string    `json:"name"`
	Owner     *owner    `json:"owner,omitempty"`
	Desired   int32     `json:"desired"`
	Ready     int32     `json:"ready"`
	Created   time.Time `json:"created"`
	// Revision is a Deployment's or ReplicaSet's
	// deployment.kubernetes.io/revision: the ReplicaSet whose revision is
	// its Deployment's is the new one of a rolling update.
	Revision string `json:"revision,omitempty"`
}

func summarizeWorkload(o v1.Object) workloadSummary {
	m := o.GetMetadata()
	w := workloadSummary{Namespace: m.GetNamespace(), Name: m.GetName(), Owner: controllerOf(m), Created: m.GetCreationTimestamp().AsTime(),
		Revision: m.GetAnnotations()["deployment.kubernetes.io/revision"]}
	switch o := o.(type) {
	case *v1.Deployment:
		w.Kind, w.Desired, w.Ready = "Deployment", o.GetSpec().GetReplicas(), o.GetStatus().GetReadyReplicas()
	case *v1.ReplicaSet:
		w.Kind, w.Desired, w.Ready = "ReplicaSet", o.GetSpec().GetReplicas(), o.GetStatus().GetReadyReplicas()
	case *v1.StatefulSet:
		w.Kind, w.Desired, w.Ready = "StatefulSet", o.GetSpec().GetReplicas(), o.GetStatus().GetReadyReplicas()
	case *v1.DaemonSet:
		w.Kind, w.Desired, w.Ready = "DaemonSet", o.GetStatus().GetDesiredNumberScheduled(), o.GetStatus().GetNumberReady()
	case *v1.Job:
		w.Kind, w.Desired, w.Ready = "Job", o.GetSpec().GetCompletions(), o.GetStatus().GetSucceeded()
	}
	return w
}

type servicePort struct {
	Name     string `json:"name,omitempty"`
	Protocol string `json:"protocol"`
	Port     int32  `json:"port"`
	Target   string `json:"target,omitempty"`
	NodePort int32  `json:"nodePort,omitempty"`
}

type serviceSummary struct {
	Namespace string            `json:"ns"`
	Name      string            `json:"name"`
	Type      string            `json:"type"`
	ClusterIP string            `json:"clusterIP"`
	Ports     []servicePort     `json:"ports"`
	Selector  map[string]string `json:"selector,omitempty"`
	External  string            `json:"externalName,omitempty"`
}

func summarizeService(s *v1.Service) serviceSummary {
	sp := s.GetSpec()
	out := serviceSummary{Namespace: s.GetMetadata().GetNamespace(), Name: s.GetMetadata().GetName(),
		Type: sp.GetType(), ClusterIP: sp.GetClusterIp(), Selector: sp.GetSelector(), External: sp.GetExternalName()}
	if out.Type == "" {
		out.Type = "ClusterIP"
	}
	for _, p := range sp.GetPorts() {
		out.Ports = append(out.Ports, servicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, Target: p.TargetPort, NodePort: p.NodePort})
	}
	return out
}

type endpointAddress struct {
	IP    string `json:"ip"`
	Node  string `json:"node,omitempty"`
	Pod   string `json:"pod,omitempty"`
	Ready bool   `json:"ready"`
}

type endpointsSummary struct {
	Namespace string            `json:"ns"`
	Name      string            `json:"name"`
	Addresses []endpointAddress `json:"addresses"`
	Ports     []string          `json:"ports,omitempty"` // "http 8080/TCP"
}

func summarizeEndpoints(e *v1.Endpoints) endpointsSummary {
	out := endpointsSummary{Namespace: e.GetMetadata().GetNamespace(), Name: e.GetMetadata().GetName(), Addresses: []endpointAddress{}}
	add := func(a *v1.EndpointAddress, ready bool) {
		ea := endpointAddress{IP: a.GetIp(), Node: a.GetNodeName(), Ready: ready}
		if r := a.GetTargetRef(); r.GetKind() == "Pod" {
			ea.Pod = r.GetName()
		}
		out.Addresses = append(out.Addresses, ea)
	}
	for _, sub := range e.GetSubsets() {
		for _, a := range sub.GetAddresses() {
			add(a, true)
		}
		for _, a := range sub.GetNotReadyAddresses() {
			add(a, false)
		}
		for _, p := range sub.GetPorts() {
			s := strings.TrimSpace(p.GetName() + " " + strconv.Itoa(int(p.GetPort())) + "/" + p.GetProtocol())
			if !slices.Contains(out.Ports, s) {
				out.Ports = append(out.Ports, s)
			}
		}
	}
	return out
}

type eventSummary struct {
	Namespace string    `json:"ns"`
	Name      string    `json:"name"`
	Kind      string    `json:"kind"`   // of the object it is about
	Object    string    `json:"object"` // its name
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Type      string    `json:"type"`
	Source    string    `json:"source"`
	Host      string    `json:"host,omitempty"`
	Layer     string    `json:"layer"`
	Count     int32     `json:"count"`
	Time      time.Time `json:"time"`
}

func summarizeEvent(e *v1.Event) eventSummary {
	io := e.GetInvolvedObject()
	return eventSummary{Namespace: e.GetMetadata().GetNamespace(), Name: e.GetMetadata().GetName(),
		Kind: io.GetKind(), Object: io.GetName(), Reason: e.Reason, Message: e.Message, Type: e.Type,
		Source: e.GetSource().GetComponent(), Host: e.GetSource().GetHost(), Layer: eventLayer(e),
		Count: e.Count, Time: table.EventTime(e)}
}

// Event layers, the filter of the events view.
const (
	layerScheduler   = "scheduler"
	layerKubelet     = "kubelet"
	layerRuntime     = "runtime"
	layerCNI         = "CNI"
	layerDNS         = "DNS"
	layerProxy       = "proxy"
	layerControllers = "controllers"
	layerAPIServer   = "apiserver"
)

// runtimeReasons are the kubelet's events about images and containers.
var runtimeReasons = []string{"Pulling", "Pulled", "Failed", "BackOff", "Created", "Started", "Killing",
	"InspectFailed", "ErrImageNeverPull", "ImageImported", "ImageImportFailed"}

// eventLayer is the layer an event comes from: its source component, and
// for the kubelet's events the part of the node they are about.
func eventLayer(e *v1.Event) string {
	src := strings.ToLower(e.GetSource().GetComponent() + " " + e.GetReportingComponent())
	switch {
	case strings.Contains(src, "scheduler"):
		return layerScheduler
	case strings.Contains(src, "kubelet"):
		switch {
		case strings.Contains(e.Reason, "Sandbox") || strings.Contains(e.Reason, "Network") ||
			strings.Contains(strings.ToLower(e.Message), "cni"):
			return layerCNI
		case slices.Contains(runtimeReasons, e.Reason):
			return layerRuntime
		}
		return layerKubelet
	case strings.Contains(src, "dns"):
		return layerDNS
	case strings.Contains(src, "proxy"):
		return layerProxy
	case strings.Contains(src, "controller"):
		return layerControllers
	}
	return layerAPIServer
}

type namedSummary struct {
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"name"`
	Type      string `json:"type,omitempty"`
}
