package tugctl

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// columnsFor returns a kind's table; kinds without one get NAME AGE.
func columnsFor(k *kinds.Kind) columns {
	switch k.Name {
	case "Pod":
		return columns{[]string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}, []string{"IP", "NODE"}, typedRow(podRow)}
	case "Node":
		return columns{[]string{"NAME", "STATUS", "ROLES", "AGE", "VERSION"}, []string{"INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME"}, typedRow(nodeRow)}
	case "Namespace":
		return columns{[]string{"NAME", "STATUS", "AGE"}, nil, typedRow(namespaceRow)}
	case "Deployment":
		return columns{[]string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}, typedRow(deploymentRow)}
	case "ReplicaSet":
		return columns{[]string{"NAME", "DESIRED", "CURRENT", "READY", "AGE"}, []string{"CONTAINERS", "IMAGES", "SELECTOR"}, typedRow(replicaSetRow)}
	case "Service":
		return columns{[]string{"NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"}, []string{"SELECTOR"}, typedRow(serviceRow)}
	case "Endpoints":
		return columns{[]string{"NAME", "ENDPOINTS", "AGE"}, nil, typedRow(endpointsRow)}
	case "Event":
		return columns{[]string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}, []string{"SOURCE", "FIRST SEEN", "COUNT", "NAME"}, typedRow(eventRow)}
	case "ConfigMap":
		return columns{[]string{"NAME", "DATA", "AGE"}, nil, typedRow(configMapRow)}
	case "Secret":
		return columns{[]string{"NAME", "TYPE", "DATA", "AGE"}, nil, typedRow(secretRow)}
	case "Lease":
		return columns{[]string{"NAME", "HOLDER", "AGE"}, nil, typedRow(leaseRow)}
	}
	return columns{[]string{"NAME", "AGE"}, nil, func(o v1.Object, now time.Time) ([]string, []string) {
		return []string{o.GetMetadata().GetName(), age(o.GetMetadata().GetCreationTimestamp(), now)}, nil
	}}
}

func typedRow[T v1.Object](f func(T, time.Time) ([]string, []string)) func(v1.Object, time.Time) ([]string, []string) {
	return func(o v1.Object, now time.Time) ([]string, []string) { return f(o.(T), now) }
}

func podRow(p *v1.Pod, now time.Time) ([]string, []string) {
	ready, status, restarts := podStatus(p, now)
	ready = fmt.Sprintf("%s/%d", ready, len(p.GetSpec().GetContainers()))
	return []string{p.Metadata.GetName(), ready, status, restarts, age(p.Metadata.GetCreationTimestamp(), now)},
		[]string{orNone(p.GetStatus().GetPodIp()), orNone(p.GetSpec().GetNodeName())}
}

// podStatus is kubectl's pod STATUS column logic: the phase, overridden by
// the pod's reason, an init container's progress, a container's waiting or
// terminated reason (CrashLoopBackOff, ImagePullBackOff, Error...), and
// Terminating once deletion has started. It returns the ready container
// count, the status and the RESTARTS cell.
func podStatus(p *v1.Pod, now time.Time) (ready, status, restarts string) {
	st := p.GetStatus()
	reason := st.GetPhase()
	if st.GetReason() != "" {
		reason = st.GetReason()
	}
	total := 0
	var lastRestart time.Time
	noteRestart := func(cs *v1.ContainerStatus) {
		total += int(cs.GetRestartCount())
		if t := cs.GetLastState().GetTerminated().GetFinishedAt(); t != nil && t.AsTime().After(lastRestart) {
			lastRestart = t.AsTime()
		}
	}
	initializing := false
	for i, cs := range st.GetInitContainerStatuses() {
		noteRestart(cs)
		term, wait := cs.GetState().GetTerminated(), cs.GetState().GetWaiting()
		switch {
		case term != nil && term.ExitCode == 0:
			continue
		case term != nil:
			switch {
			case term.Reason != "":
				reason = "Init:" + term.Reason
			case term.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", term.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", term.ExitCode)
			}
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			reason = "Init:" + wait.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(p.GetSpec().GetInitContainers()))
		}
		initializing = true
		break
	}
	readyCount := 0
	if !initializing {
		total, lastRestart = 0, time.Time{}
		hasRunning := false
		list := st.GetContainerStatuses()
		for i := len(list) - 1; i >= 0; i-- {
			cs := list[i]
			noteRestart(cs)
			term, wait := cs.GetState().GetTerminated(), cs.GetState().GetWaiting()
			switch {
			case wait != nil && wait.Reason != "":
				reason = wait.Reason
			case term != nil && term.Reason != "":
				reason = term.Reason
			case term != nil && term.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", term.Signal)
			case term != nil:
				reason = fmt.Sprintf("ExitCode:%d", term.ExitCode)
			case cs.Ready && cs.GetState().GetRunning() != nil:
				hasRunning = true
				readyCount++
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			if conditionStatus(st.GetConditions(), "Ready") == "True" {
				reason = "Running"
			}
		}
	}
	if p.GetMetadata().GetDeletionTimestamp() != nil {
		reason = "Terminating"
		if st.GetReason() == "NodeLost" {
			reason = "Unknown"
		}
	}
	restarts = fmt.Sprint(total)
	if total > 0 && !lastRestart.IsZero() {
		restarts += fmt.Sprintf(" (%s ago)", humanDuration(now.Sub(lastRestart)))
	}
	return fmt.Sprint(readyCount), reason, restarts
}

func conditionStatus(conds []*v1.Condition, typ string) string {
	if c := condition(conds, typ); c != nil {
		return c.Status
	}
	return ""
}

func condition(conds []*v1.Condition, typ string) *v1.Condition {
	for _, c := range conds {
		if c.GetType() == typ {
			return c
		}
	}
	return nil
}

// nodeStatus is Ready, NotReady or Unknown, plus ",SchedulingDisabled".
func nodeStatus(n *v1.Node) string {
	var s string
	switch conditionStatus(n.GetStatus().GetConditions(), "Ready") {
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

// nodeRoles are the X of node-role.kubernetes.io/X labels.
func nodeRoles(n *v1.Node) string {
	var roles []string
	for k, v := range n.GetMetadata().GetLabels() {
		if r, ok := strings.CutPrefix(k, "node-role.kubernetes.io/"); ok && r != "" {
			roles = append(roles, r)
		} else if k == "kubernetes.io/role" && v != "" {
			roles = append(roles, v)
		}
	}
	sort.Strings(roles)
	return orNone(strings.Join(roles, ","))
}

func nodeAddress(n *v1.Node, typ string) string {
	for _, a := range n.GetStatus().GetAddresses() {
		if a.Type == typ {
			return a.Address
		}
	}
	return "<none>"
}

func nodeRow(n *v1.Node, now time.Time) ([]string, []string) {
	info := n.GetStatus().GetNodeInfo()
	return []string{n.Metadata.GetName(), nodeStatus(n), nodeRoles(n), age(n.Metadata.GetCreationTimestamp(), now), orNone(info.GetKubeletVersion())},
		[]string{nodeAddress(n, "InternalIP"), nodeAddress(n, "ExternalIP"), orNone(info.GetOsImage()), orNone(info.GetKernelVersion()), orNone(info.GetContainerRuntimeVersion())}
}

func namespaceRow(n *v1.Namespace, now time.Time) ([]string, []string) {
	return []string{n.Metadata.GetName(), orNone(n.GetStatus().GetPhase()), age(n.Metadata.GetCreationTimestamp(), now)}, nil
}

func serviceRow(s *v1.Service, now time.Time) ([]string, []string) {
	sp := s.GetSpec()
	return []string{s.Metadata.GetName(), sp.GetType(), orNone(sp.GetClusterIp()), "<none>", servicePorts(sp), age(s.Metadata.GetCreationTimestamp(), now)},
		[]string{labelString(sp.GetSelector())}
}

// servicePorts is "80/TCP" or "80:30007/TCP", comma-separated.
func servicePorts(sp *v1.ServiceSpec) string {
	var parts []string
	for _, p := range sp.GetPorts() {
		s := fmt.Sprint(p.Port)
		if p.NodePort != 0 {
			s += fmt.Sprintf(":%d", p.NodePort)
		}
		parts = append(parts, s+"/"+orDefault(p.Protocol, "TCP"))
	}
	return orNone(strings.Join(parts, ","))
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func endpointsRow(e *v1.Endpoints, now time.Time) ([]string, []string) {
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
	cell := "<none>"
	if len(eps) > 0 {
		cell = strings.Join(eps[:min(3, len(eps))], ",")
		if len(eps) > 3 {
			cell += fmt.Sprintf(" + %d more...", len(eps)-3)
		}
	}
	return []string{e.Metadata.GetName(), cell, age(e.Metadata.GetCreationTimestamp(), now)}, nil
}

// eventTime is when an event was last seen.
func eventTime(e *v1.Event) time.Time {
	for _, ts := range []*timestamppb.Timestamp{e.GetLastTimestamp(), e.GetFirstTimestamp(), e.GetMetadata().GetCreationTimestamp()} {
		if ts != nil {
			return ts.AsTime()
		}
	}
	return time.Time{}
}

func eventRow(e *v1.Event, now time.Time) ([]string, []string) {
	io := e.GetInvolvedObject()
	obj := strings.ToLower(io.GetKind()) + "/" + io.GetName()
	src := e.GetSource().GetComponent()
	if h := e.GetSource().GetHost(); h != "" {
		src += ", " + h
	}
	last := "<unknown>"
	if t := eventTime(e); !t.IsZero() {
		last = humanDuration(now.Sub(t))
	}
	return []string{last, e.Type, e.Reason, obj, e.Message},
		[]string{orNone(src), age(e.GetFirstTimestamp(), now), fmt.Sprint(e.Count), e.Metadata.GetName()}
}

func configMapRow(c *v1.ConfigMap, now time.Time) ([]string, []string) {
	return []string{c.Metadata.GetName(), fmt.Sprint(len(c.Data) + len(c.BinaryData)), age(c.Metadata.GetCreationTimestamp(), now)}, nil
}

func secretRow(s *v1.Secret, now time.Time) ([]string, []string) {
	return []string{s.Metadata.GetName(), s.Type, fmt.Sprint(len(s.Data)), age(s.Metadata.GetCreationTimestamp(), now)}, nil
}

func leaseRow(l *v1.Lease, now time.Time) ([]string, []string) {
	return []string{l.Metadata.GetName(), orNone(l.GetSpec().GetHolderIdentity()), age(l.Metadata.GetCreationTimestamp(), now)}, nil
}
