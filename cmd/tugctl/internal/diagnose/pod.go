package diagnose

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/labels"
	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The kubelet's timeline conditions (kubelet/pod/status.go): each one's
// lastTransitionTime is when that step was reached.
const (
	condScheduled     = "PodScheduled"
	condAccepted      = "tugboat.io/Accepted"
	condImagesReady   = "tugboat.io/ImagesReady"
	condSandbox       = "PodReadyToStartContainers"
	condInitialized   = "Initialized"
	condStarted       = "tugboat.io/ContainersStarted"
	condReady         = "Ready"
	restartRecentSpan = 10 * time.Minute
)

// podTrace is everything a pod's trace looks at.
type podTrace struct {
	pod *v1.Pod
	// node is the pod's Node (nil: unbound, or nodeMissing).
	node        *v1.Node
	nodeMissing bool
	events      []*v1.Event
	services    []serviceEndpoints
	now         time.Time
}

// serviceEndpoints is a Service selecting the pod and its Endpoints (nil
// if none yet).
type serviceEndpoints struct {
	svc *v1.Service
	eps *v1.Endpoints
}

// TracePod reads the pod, its node, events and Services and traces it.
func TracePod(ctx context.Context, c *client.Client, ns, name string, now time.Time) (*Report, error) {
	pod, err := client.For[*v1.Pod](c).Get(ctx, ns, name)
	if apierrors.IsNotFound(err) {
		return nil, apierrors.New(apierrors.ErrNotFound, "pods %q not found in namespace %s", name, ns)
	}
	if err != nil {
		return nil, err
	}
	in := podTrace{pod: pod, now: now}
	if n := pod.GetSpec().GetNodeName(); n != "" {
		in.node, err = client.For[*v1.Node](c).Get(ctx, "", n)
		switch {
		case apierrors.IsNotFound(err):
			in.nodeMissing = true
		case err != nil:
			return nil, err
		}
	}
	if in.events, err = Events(ctx, c, pod); err != nil {
		return nil, err
	}
	svcs, _, err := client.For[*v1.Service](c).List(ctx, client.ListOptions{Namespace: ns})
	if err != nil {
		return nil, err
	}
	for _, s := range svcs {
		sel := s.GetSpec().GetSelector()
		if len(sel) == 0 || !labels.SelectorFromSet(sel).Matches(pod.GetMetadata().GetLabels()) {
			continue
		}
		se := serviceEndpoints{svc: s}
		if se.eps, err = client.For[*v1.Endpoints](c).Get(ctx, ns, s.GetMetadata().GetName()); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		in.services = append(in.services, se)
	}
	return buildPodTrace(in), nil
}

// buildPodTrace is the pod's journey, from its objects alone.
func buildPodTrace(in podTrace) *Report {
	p := in.pod
	m, sp, st := p.GetMetadata(), p.GetSpec(), p.GetStatus()
	conds := st.GetConditions()
	node := sp.GetNodeName()
	r := &Report{Kind: "Pod", Namespace: m.GetNamespace(), Name: m.GetName(), Node: node}
	_, status, _ := table.PodStatus(p, in.now)
	if st.GetPhase() == "Failed" && st.GetReason() != "" {
		status = st.GetReason()
	}
	r.Summary = status
	if node != "" {
		r.Summary += " on " + node
	}
	if st.GetPodIp() != "" {
		r.Summary += ", IP " + st.GetPodIp()
	}
	add := func(h Hop) *Hop {
		if h.Status == "" {
			h.Status = HopWaiting
		}
		r.Hops = append(r.Hops, h)
		return &r.Hops[len(r.Hops)-1]
	}
	created := m.GetCreationTimestamp().AsTime()
	add(Hop{Hop: "accepted", Title: "accepted and stored", Layer: LayerAPIServer, Component: "apiserver", Status: HopDone, Time: &created})

	// Scheduled.
	sched := Hop{Hop: "scheduled", Title: "scheduled", Layer: LayerScheduler, Component: "scheduler"}
	switch c := table.Condition(conds, condScheduled); {
	case node != "":
		sched.Status, sched.Title, sched.Time = HopDone, "scheduled to "+node, timeIfTrue(conds, condScheduled)
	case c != nil && c.Status == "False":
		sched.Status, sched.Reason, sched.Message = HopFailed, cmp.Or(c.Reason, "Unschedulable"), c.Message
	default:
		sched.Reason = "NotScheduledYet"
		sched.Message = "no scheduler has decided about the pod yet: is the scheduler running (and is spec.schedulerName one it serves)?"
	}
	add(sched)

	// On the node: a chain of the kubelet's timeline conditions.
	kubeletHop := func(id, title, layer, component, cond string) *Hop {
		h := Hop{Hop: id, Title: title, Layer: layer, Component: component, Node: node}
		if node == "" {
			return add(h)
		}
		switch c := table.Condition(conds, cond); {
		case c == nil:
		case c.Status == "True":
			h.Status, h.Time = HopDone, timeIfTrue(conds, cond)
		default:
			h.Reason, h.Message = c.Reason, c.Message
			if c.LastTransitionTime != nil {
				t := c.LastTransitionTime.AsTime()
				h.Time = &t
			}
		}
		return add(h)
	}
	seen := kubeletHop("kubelet", "seen by the kubelet", LayerKubelet, "kubelet", condAccepted)
	if node != "" && seen.Status != HopDone {
		seen.Reason = "NotSeenByKubelet"
		seen.Message = "the kubelet on " + node + " has not picked the pod up: is it running and connected to the apiserver?"
	}
	sb := kubeletHop("sandbox", "sandbox and IP", LayerCNI, "CNI", condSandbox)
	if sb.Status == HopDone && st.GetPodIp() != "" {
		sb.Title = "sandbox and IP " + st.GetPodIp()
	}
	switch sb.Reason {
	case "", "SandboxNotReady":
	case "PodCompleted": // made, then released when the pod finished
		sb.Status, sb.Title, sb.Time, sb.Reason, sb.Message = HopDone, "sandbox and IP (released: the pod finished)", nil, "", ""
	default:
		sb.Status = HopFailed // FailedCreatePodSandbox, NetworkNotReady
	}
	img := kubeletHop("images", "images ready", LayerKubelet, "kubelet", condImagesReady)
	if img.Reason != "" {
		img.Status = HopFailed // ErrImagePull, ImagePullBackOff, ErrImageNeverPull, InvalidImageName
	}
	if len(sp.GetInitContainers()) > 0 {
		h := kubeletHop("initialized", "init containers done", LayerKubelet, "kubelet", condInitialized)
		if w := containerProblem(st.GetInitContainerStatuses()); h.Status != HopDone && w != nil {
			h.Status, h.Reason, h.Message = HopFailed, w.reason, w.message
		}
	}
	started := kubeletHop("started", "containers started", LayerKubelet, "runtime", condStarted)
	if w := containerProblem(st.GetContainerStatuses()); started.Status != HopDone && w != nil && !w.restarting {
		started.Status, started.Reason, started.Message = HopFailed, w.reason, w.message
	}
	add(runningHop(in, node))
	add(readyHop(in, node))
	for _, h := range endpointHops(in) {
		add(h)
	}
	r.finish(func(h *Hop) Finding { return diagnosePod(in, h) })
	return r
}

// containerIssue is why containers are not running.
type containerIssue struct {
	container, reason, message string
	// restarting: it ran before (a crash loop, not a start failure).
	restarting bool
}

// benignWaiting are waiting reasons of a container on its way.
var benignWaiting = []string{"", "ContainerCreating", "PodInitializing"}

// containerProblem is the first container waiting for a bad reason, or
// terminated with a failure, or nil.
func containerProblem(statuses []*v1.ContainerStatus) *containerIssue {
	for _, cs := range statuses {
		if w := cs.GetState().GetWaiting(); w != nil && !slices.Contains(benignWaiting, w.Reason) {
			return &containerIssue{container: cs.Name, reason: w.Reason, message: w.Message,
				restarting: cs.RestartCount > 0 || cs.GetLastState().GetTerminated() != nil}
		}
		if t := cs.GetState().GetTerminated(); t != nil && t.ExitCode != 0 {
			return &containerIssue{container: cs.Name, reason: cmp.Or(t.Reason, "Error"),
				message: fmt.Sprintf("container %s exited with code %d", cs.Name, t.ExitCode), restarting: true}
		}
	}
	return nil
}

// runningHop: the containers keep running — none restarted recently.
func runningHop(in podTrace, node string) Hop {
	st := in.pod.GetStatus()
	h := Hop{Hop: "running", Title: "containers keep running", Layer: LayerKubelet, Component: "runtime", Node: node}
	switch {
	case st.GetPhase() == "Failed" && st.GetReason() != "":
		// The kubelet failed the pod for good (Evicted): that is the stop.
		h.Status, h.Reason, h.Message, h.Component = HopFailed, st.GetReason(), st.GetMessage(), "kubelet"
		return h
	case node == "" || table.Condition(st.GetConditions(), condStarted).GetStatus() != "True":
		return h
	case st.GetPhase() == "Succeeded":
		h.Status, h.Title = HopSkipped, "containers completed"
		return h
	}
	h.Status = HopDone
	var restarts int32
	var last *v1.ContainerStatus
	var lastAt time.Time
	for _, cs := range st.GetContainerStatuses() {
		restarts += cs.RestartCount
		if t := cs.GetLastState().GetTerminated(); t != nil && t.FinishedAt != nil && t.FinishedAt.AsTime().After(lastAt) {
			last, lastAt = cs, t.FinishedAt.AsTime()
		}
		if t := cs.GetState().GetTerminated(); t != nil && t.ExitCode != 0 && t.FinishedAt != nil && t.FinishedAt.AsTime().After(lastAt) {
			last, lastAt = cs, t.FinishedAt.AsTime()
		}
	}
	issue := containerProblem(st.GetContainerStatuses())
	recent := last != nil && in.now.Sub(lastAt) < restartRecentSpan
	if issue == nil && !recent {
		if restarts > 0 {
			h.Title = fmt.Sprintf("containers keep running (%s, none in the last %s)", plural(int(restarts), "restart"), table.HumanDuration(restartRecentSpan))
		}
		return h
	}
	h.Status = HopFailed
	if !lastAt.IsZero() {
		h.Time = &lastAt
	}
	h.Reason, h.Message = restartReason(in, issue, last, restarts)
	return h
}

// restartReason names why containers restart: a failed liveness or
// startup probe (from the kubelet's Killing events), OOM, or a crash.
func restartReason(in podTrace, issue *containerIssue, last *v1.ContainerStatus, restarts int32) (string, string) {
	for i := len(in.events) - 1; i >= 0; i-- {
		e := in.events[i]
		if e.Reason != "Killing" {
			continue
		}
		for probe, reason := range map[string]string{"liveness probe": "LivenessProbeFailed", "startup probe": "StartupProbeFailed"} {
			if containsFold(e.Message, "failed "+probe) {
				msg := e.Message
				if u := lastEvent(in.events, "Unhealthy", probe[:len(probe)-len(" probe")]); u != nil {
					msg = u.Message + "; " + msg
				}
				return reason, fmt.Sprintf("%s (%s)", msg, plural(int(restarts), "restart"))
			}
		}
	}
	if last != nil {
		if t := last.GetLastState().GetTerminated(); t != nil && t.Reason == "OOMKilled" {
			return "OOMKilled", fmt.Sprintf("container %s was killed for using more memory than its limit (%s)", last.Name, plural(int(restarts), "restart"))
		}
	}
	if issue != nil && issue.reason == "CrashLoopBackOff" {
		msg := issue.message
		if t := lastTerminated(in.pod, issue.container); t != nil {
			msg = fmt.Sprintf("container %s exits with code %d (%s); %s", issue.container, t.ExitCode, cmp.Or(t.Reason, "Error"), msg)
		}
		return "CrashLoopBackOff", fmt.Sprintf("%s (%s)", msg, plural(int(restarts), "restart"))
	}
	if issue != nil {
		return issue.reason, issue.message
	}
	t := last.GetLastState().GetTerminated()
	return "Restarted", fmt.Sprintf("container %s exited with code %d (%s) %s ago (%s)", last.Name, t.GetExitCode(),
		cmp.Or(t.GetReason(), "Error"), table.HumanDuration(in.now.Sub(t.GetFinishedAt().AsTime())), plural(int(restarts), "restart"))
}

func lastTerminated(p *v1.Pod, container string) *v1.ContainerStateTerminated {
	for _, cs := range p.GetStatus().GetContainerStatuses() {
		if cs.Name == container {
			return cs.GetLastState().GetTerminated()
		}
	}
	return nil
}

// lastEvent is the latest event with reason whose message starts with
// prefix (case-insensitive), or nil.
func lastEvent(events []*v1.Event, reason, prefix string) *v1.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if e := events[i]; e.Reason == reason && len(e.Message) >= len(prefix) && containsFold(e.Message[:len(prefix)], prefix) {
			return e
		}
	}
	return nil
}

// plural is "1 restart", "3 restarts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
