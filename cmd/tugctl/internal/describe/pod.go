package describe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func describePod(ctx context.Context, d *describer, p *v1.Pod) error {
	m, sp, st := p.GetMetadata(), p.GetSpec(), p.GetStatus()
	d.kv(0, "Name", m.GetName())
	d.kv(0, "Namespace", m.GetNamespace())
	d.kv(0, "Priority", sp.GetPriority())
	d.kv(0, "Service Account", cmp.Or(sp.GetServiceAccountName(), "default"))
	node := "<none>"
	if sp.GetNodeName() != "" {
		node = sp.GetNodeName()
		if st.GetHostIp() != "" {
			node += "/" + st.GetHostIp()
		}
	}
	d.kv(0, "Node", node)
	d.kv(0, "Start Time", timeString(st.GetStartTime()))
	d.mapLines(0, "Labels", m.GetLabels(), "=")
	d.mapLines(0, "Annotations", m.GetAnnotations(), ": ")
	_, status, _ := table.PodStatus(p, d.now)
	if m.GetDeletionTimestamp() != nil {
		status = fmt.Sprintf("Terminating (lasts %s)", table.HumanDuration(d.now.Sub(m.GetDeletionTimestamp().AsTime())))
		d.kv(0, "Status", status)
		d.kv(0, "Termination Grace Period", fmt.Sprintf("%ds", m.GetDeletionGracePeriodSeconds()))
	} else {
		d.kv(0, "Status", status)
	}
	if st.GetReason() != "" {
		d.kv(0, "Reason", st.GetReason())
	}
	if st.GetMessage() != "" {
		d.kv(0, "Message", st.GetMessage())
	}
	d.kv(0, "IP", cmp.Or(st.GetPodIp(), ""))
	d.controlledBy(m)
	if st.GetNominatedNodeName() != "" {
		d.kv(0, "NominatedNodeName", st.GetNominatedNodeName())
	}
	if r := sp.GetResources(); r != nil && (len(r.Limits) > 0 || len(r.Requests) > 0) {
		// Pod-level resources (spec.resources), as kubectl shows them.
		d.text(0, "Resources:")
		d.resourceLists(1, r.Limits, r.Requests)
	}
	if len(sp.GetInitContainers()) > 0 {
		d.text(0, "Init Containers:")
		d.containers(sp.GetInitContainers(), st.GetInitContainerStatuses(), nil)
	}
	d.text(0, "Containers:")
	d.containers(sp.GetContainers(), st.GetContainerStatuses(), nil)
	if ecs := sp.GetEphemeralContainers(); len(ecs) > 0 {
		d.text(0, "Ephemeral Containers:")
		cs := make([]*v1.Container, len(ecs))
		targets := map[string]string{}
		for i, e := range ecs {
			cs[i], targets[e.Name] = e.AsContainer(), e.TargetContainerName
		}
		d.containers(cs, st.GetEphemeralContainerStatuses(), targets)
	}
	d.conditions(st.GetConditions(), false)
	for _, c := range st.GetConditions() {
		// A resize the kubelet has not admitted or applied says why.
		if (c.Type == "PodResizePending" || c.Type == "PodResizeInProgress") && c.Status == "True" {
			d.kv(0, strings.TrimPrefix(c.Type, "Pod"), strings.TrimSuffix(cmp.Or(c.Reason, "InProgress")+": "+c.Message, ": "))
		}
	}
	d.volumes(sp.GetVolumes())
	d.resourceClaims(sp.GetResourceClaims(), st.GetResourceClaimStatuses())
	if st.GetQosClass() != "" {
		d.kv(0, "QoS Class", st.GetQosClass())
	}
	d.podDNS(sp)
	d.mapLines(0, "Node-Selectors", sp.GetNodeSelector(), "=")
	d.tolerations(sp.GetTolerations())
	d.topologySpread(sp.GetTopologySpreadConstraints())
	return d.events(ctx, p)
}

// topologySpread writes the constraints as kubectl does (sorted by key),
// only when there are some.
func (d *describer) topologySpread(cs []*v1.TopologySpreadConstraint) {
	cs = slices.Clone(cs)
	slices.SortStableFunc(cs, func(a, b *v1.TopologySpreadConstraint) int { return strings.Compare(a.TopologyKey, b.TopologyKey) })
	for i, c := range cs {
		s := fmt.Sprintf("%s:%s when max skew %d is exceeded", c.TopologyKey, c.WhenUnsatisfiable, c.MaxSkew)
		if c.LabelSelector != nil {
			s += " for selector " + table.SelectorString(c.LabelSelector)
		}
		key := "Topology Spread Constraints:"
		if i > 0 {
			key = ""
		}
		d.text(0, "%s\t%s", key, s)
	}
}

// containers writes each container with its status, as kubectl does;
// targets are ephemeral containers' targetContainerName by name (nil for
// other containers).
func (d *describer) containers(cs []*v1.Container, statuses []*v1.ContainerStatus, targets map[string]string) {
	byName := map[string]*v1.ContainerStatus{}
	for _, s := range statuses {
		byName[s.Name] = s
	}
	for _, c := range cs {
		s := byName[c.Name]
		d.text(1, "%s:", c.Name)
		if s != nil {
			d.kv(2, "Container ID", s.ContainerId)
		}
		if t, ok := targets[c.Name]; ok && t != "" {
			d.kv(2, "Target Container Name", t)
		}
		d.kv(2, "Image", c.Image)
		if s != nil {
			d.kv(2, "Image ID", s.ImageId)
		}
		var ports []string
		for _, p := range c.Ports {
			ports = append(ports, fmt.Sprintf("%d/%s", p.ContainerPort, cmp.Or(p.Protocol, "TCP")))
		}
		d.kv(2, "Port", table.OrNone(strings.Join(ports, ", ")))
		if len(c.Command) > 0 {
			d.listLines(2, "Command", c.Command)
		}
		if len(c.Args) > 0 {
			d.listLines(2, "Args", c.Args)
		}
		if s != nil {
			d.containerState(2, "State", s.State)
			if s.LastState != nil && (s.LastState.Terminated != nil || s.LastState.Running != nil || s.LastState.Waiting != nil) {
				d.containerState(2, "Last State", s.LastState)
			}
			d.kv(2, "Ready", boolTitle(s.Ready))
			d.kv(2, "Restart Count", s.RestartCount)
		}
		if r := c.GetResources(); r != nil {
			d.resourceLists(2, r.Limits, r.Requests)
			if len(r.Claims) > 0 {
				d.text(2, "Claims:")
				for _, rc := range r.Claims {
					if rc.Request != "" {
						d.text(3, "%s (request %s)", rc.Name, rc.Request)
					} else {
						d.text(3, "%s", rc.Name)
					}
				}
			}
		}
		d.resized(c, s)
		for _, pr := range []struct {
			name  string
			probe *v1.Probe
		}{{"Liveness", c.LivenessProbe}, {"Readiness", c.ReadinessProbe}, {"Startup", c.StartupProbe}} {
			if pr.probe != nil {
				d.kv(2, pr.name, probeString(pr.probe))
			}
		}
		if c.RestartPolicy != "" {
			d.kv(2, "Restart Policy", c.RestartPolicy)
		}
		if h := c.GetLifecycle().GetPostStart(); h != nil {
			d.kv(2, "PostStart", hookString(h))
		}
		if h := c.GetLifecycle().GetPreStop(); h != nil {
			d.kv(2, "PreStop", hookString(h))
		}
		if p, pol := c.TerminationMessagePath, c.TerminationMessagePolicy; (p != "" && p != "/dev/termination-log") || (pol != "" && pol != "File") {
			d.kv(2, "Termination Message", fmt.Sprintf("%s (%s)", cmp.Or(p, "<none>"), cmp.Or(pol, "File")))
		}
		if len(c.Env) == 0 {
			d.kv(2, "Environment", "<none>")
		} else {
			d.text(2, "Environment:")
			for _, e := range c.Env {
				v := e.Value
				if ref := e.GetValueFrom(); ref != nil {
					switch {
					case ref.ConfigMapKeyRef != nil:
						v = fmt.Sprintf("<set to the key '%s' of config map '%s'>", ref.ConfigMapKeyRef.Key, ref.ConfigMapKeyRef.Name)
					case ref.SecretKeyRef != nil:
						v = fmt.Sprintf("<set to the key '%s' in secret '%s'>", ref.SecretKeyRef.Key, ref.SecretKeyRef.Name)
					case ref.FieldRef != nil:
						v = fmt.Sprintf("(%s)", ref.FieldRef.FieldPath)
					case ref.FileKeyRef != nil:
						v = fmt.Sprintf("<set to the key '%s' of the env file '%s' in volume '%s'>", ref.FileKeyRef.Key, ref.FileKeyRef.Path, ref.FileKeyRef.VolumeName)
					}
				}
				d.kv(3, e.Name, v)
			}
		}
		if len(c.VolumeMounts) == 0 {
			d.kv(2, "Mounts", "<none>")
		} else {
			d.text(2, "Mounts:")
			for _, vm := range c.VolumeMounts {
				mode := "rw"
				if vm.ReadOnly {
					mode = "ro"
				}
				d.text(3, "%s from %s (%s)", vm.MountPath, vm.Name, mode)
			}
		}
	}
}

// resized shows a container's resize state: its resize policy, the
// requests the kubelet allocated it and, when they differ from the spec
// (a resize pending or in progress), what it runs with.
func (d *describer) resized(c *v1.Container, s *v1.ContainerStatus) {
	var pol []string
	for _, p := range c.GetResizePolicy() {
		pol = append(pol, p.ResourceName+"="+p.RestartPolicy)
	}
	if len(pol) > 0 {
		d.kv(2, "Resize Policy", strings.Join(pol, ", "))
	}
	if len(s.GetAllocatedResources()) > 0 {
		d.text(2, "Allocated Resources:")
		d.quantities(3, s.GetAllocatedResources())
	}
	if r := s.GetResources(); r != nil && !(sameQuantities(r.Limits, c.GetResources().GetLimits()) && sameQuantities(r.Requests, c.GetResources().GetRequests())) {
		d.text(2, "Running With:")
		d.resourceLists(3, r.Limits, r.Requests)
	}
}

func sameQuantities(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func (d *describer) listLines(level int, key string, items []string) {
	d.text(level, "%s:", key)
	for _, it := range items {
		d.text(level+1, "%s", it)
	}
}

func (d *describer) containerState(level int, key string, s *v1.ContainerState) {
	switch {
	case s.GetRunning() != nil:
		d.kv(level, key, "Running")
		d.kv(level+1, "Started", timeString(s.Running.StartedAt))
	case s.GetWaiting() != nil:
		d.kv(level, key, "Waiting")
		if s.Waiting.Reason != "" {
			d.kv(level+1, "Reason", s.Waiting.Reason)
		}
		if s.Waiting.Message != "" {
			d.kv(level+1, "Message", s.Waiting.Message)
		}
	case s.GetTerminated() != nil:
		t := s.Terminated
		d.kv(level, key, "Terminated")
		d.kv(level+1, "Reason", cmp.Or(t.Reason, "<none>"))
		if t.Message != "" {
			d.kv(level+1, "Message", t.Message)
		}
		d.kv(level+1, "Exit Code", t.ExitCode)
		if t.Signal != 0 {
			d.kv(level+1, "Signal", t.Signal)
		}
		d.kv(level+1, "Started", timeString(t.StartedAt))
		d.kv(level+1, "Finished", timeString(t.FinishedAt))
	default:
		d.kv(level, key, "Waiting")
	}
}

// resourceLists writes limits then requests, each under its heading
// when it has any, as kubectl's describeResources.
func (d *describer) resourceLists(level int, limits, requests map[string]string) {
	if len(limits) > 0 {
		d.text(level, "Limits:")
		d.quantities(level+1, limits)
	}
	if len(requests) > 0 {
		d.text(level, "Requests:")
		d.quantities(level+1, requests)
	}
}

func (d *describer) quantities(level int, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		d.kv(level, k, m[k])
	}
}

// probeString is kubectl's one-line probe summary.
func probeString(p *v1.Probe) string {
	var action string
	switch {
	case p.HttpGet != nil:
		action = fmt.Sprintf("http-get %s://%s:%s%s", strings.ToLower(cmp.Or(p.HttpGet.Scheme, "HTTP")), p.HttpGet.Host, p.HttpGet.Port, p.HttpGet.Path)
	case p.TcpSocket != nil:
		action = fmt.Sprintf("tcp-socket %s:%s", p.TcpSocket.Host, p.TcpSocket.Port)
	case p.Exec != nil:
		action = fmt.Sprintf("exec %v", p.Exec.Command)
	case p.Grpc != nil:
		action = fmt.Sprintf("grpc <pod>:%d %s", p.Grpc.Port, p.Grpc.GetService())
	default:
		action = "unknown"
	}
	return fmt.Sprintf("%s delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		action, p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
}

func (d *describer) volumes(vols []*v1.Volume) {
	if len(vols) == 0 {
		d.kv(0, "Volumes", "<none>")
		return
	}
	d.text(0, "Volumes:")
	for _, v := range vols {
		d.text(1, "%s:", v.Name)
		switch {
		case v.EmptyDir != nil:
			d.kv(2, "Type", "EmptyDir (a temporary directory that shares a pod's lifetime)")
			d.kv(2, "Medium", v.EmptyDir.Medium)
			d.kv(2, "SizeLimit", cmp.Or(v.EmptyDir.SizeLimit, "<unset>"))
		case v.HostPath != nil:
			d.kv(2, "Type", "HostPath (bare host directory volume)")
			d.kv(2, "Path", v.HostPath.Path)
		case v.ConfigMap != nil:
			d.kv(2, "Type", "ConfigMap (a volume populated by a ConfigMap)")
			d.kv(2, "Name", v.ConfigMap.Name)
			d.kv(2, "Optional", v.ConfigMap.Optional)
		case v.Secret != nil:
			d.kv(2, "Type", "Secret (a volume populated by a Secret)")
			d.kv(2, "SecretName", v.Secret.SecretName)
			d.kv(2, "Optional", v.Secret.Optional)
		case v.PersistentVolumeClaim != nil:
			d.kv(2, "Type", "PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)")
			d.kv(2, "ClaimName", v.PersistentVolumeClaim.ClaimName)
			d.kv(2, "ReadOnly", v.PersistentVolumeClaim.ReadOnly)
		case v.Image != nil:
			d.kv(2, "Type", "Image (a container image or OCI artifact)")
			d.kv(2, "Reference", v.Image.Reference)
			d.kv(2, "PullPolicy", v.Image.PullPolicy)
		case v.DownwardApi != nil:
			d.kv(2, "Type", "DownwardAPI (a volume populated by information about the pod)")
			d.text(2, "Items:")
			d.downwardItems(v.DownwardApi.Items)
		case v.Projected != nil:
			// As kubectl: one line (or two) per source.
			d.kv(2, "Type", "Projected (a volume that contains injected data from multiple sources)")
			for _, src := range v.Projected.Sources {
				switch {
				case src.Secret != nil:
					d.kv(2, "SecretName", src.Secret.Name)
					d.kv(2, "SecretOptionalName", src.Secret.Optional)
				case src.DownwardApi != nil:
					d.kv(2, "DownwardAPI", true)
				case src.ConfigMap != nil:
					d.kv(2, "ConfigMapName", src.ConfigMap.Name)
					d.kv(2, "ConfigMapOptional", src.ConfigMap.Optional)
				case src.ServiceAccountToken != nil:
					d.kv(2, "TokenExpirationSeconds", src.ServiceAccountToken.GetExpirationSeconds())
				}
			}
		}
	}
}

// downwardItems lists "fieldPath -> path" as kubectl does.
func (d *describer) downwardItems(items []*v1.DownwardAPIVolumeFile) {
	for _, it := range items {
		if it.FieldRef != nil {
			d.text(3, "%s -> %s", it.FieldRef.FieldPath, it.Path)
		}
		if it.ResourceFieldRef != nil {
			d.text(3, "%s -> %s", it.ResourceFieldRef.Resource, it.Path)
		}
	}
}

func (d *describer) tolerations(ts []*v1.Toleration) {
	if len(ts) == 0 {
		d.kv(0, "Tolerations", "<none>")
		return
	}
	for i, t := range ts {
		s := t.Key
		if t.Operator == "Equal" || (t.Operator == "" && t.Value != "") {
			s += "=" + t.Value
		}
		if t.Effect != "" {
			s += ":" + t.Effect
		}
		if t.Operator == "Exists" && t.Key == "" {
			s = "op=Exists"
		} else if t.Operator == "Exists" {
			s += " op=Exists"
		}
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		key := "Tolerations:"
		if i > 0 {
			key = ""
		}
		d.text(0, "%s\t%s", key, s)
	}
}

func boolTitle(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// hookString is a one-line summary of a lifecycle hook.
func hookString(h *v1.LifecycleHandler) string {
	switch {
	case h.Exec != nil:
		return fmt.Sprintf("exec %v", h.Exec.Command)
	case h.HttpGet != nil:
		return fmt.Sprintf("http-get %s://%s:%s%s", strings.ToLower(cmp.Or(h.HttpGet.Scheme, "HTTP")), h.HttpGet.Host, h.HttpGet.Port, cmp.Or(h.HttpGet.Path, "/"))
	case h.Sleep != nil:
		return fmt.Sprintf("sleep %ds", h.Sleep.Seconds)
	case h.TcpSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s", h.TcpSocket.Host, h.TcpSocket.Port)
	}
	return "unknown"
}

// podDNS writes the pod's DNS policy, its dnsConfig and hostAliases when
// it has them.
func (d *describer) podDNS(sp *v1.PodSpec) {
	if sp.GetDnsPolicy() != "" && sp.GetDnsPolicy() != "ClusterFirst" {
		d.kv(0, "DNS Policy", sp.GetDnsPolicy())
	}
	if dc := sp.GetDnsConfig(); dc != nil {
		d.text(0, "DNS Config:")
		if len(dc.Nameservers) > 0 {
			d.kv(1, "Nameservers", strings.Join(dc.Nameservers, ", "))
		}
		if len(dc.Searches) > 0 {
			d.kv(1, "Searches", strings.Join(dc.Searches, ", "))
		}
		var opts []string
		for _, o := range dc.Options {
			if o.Value != nil {
				opts = append(opts, o.Name+":"+*o.Value)
			} else {
				opts = append(opts, o.Name)
			}
		}
		if len(opts) > 0 {
			d.kv(1, "Options", strings.Join(opts, ", "))
		}
	}
	if len(sp.GetHostAliases()) > 0 {
		d.text(0, "Host Aliases:")
		for _, a := range sp.GetHostAliases() {
			d.kv(1, a.Ip, strings.Join(a.Hostnames, ", "))
		}
	}
}

// resourceClaims lists the pod's claims: each entry's ResourceClaim, or its
// template and the claim the resourceclaim controller made from it (or
// that none is made yet).
func (d *describer) resourceClaims(claims []*v1.PodResourceClaim, statuses []*v1.PodResourceClaimStatus) {
	if len(claims) == 0 {
		return
	}
	made := map[string]*v1.PodResourceClaimStatus{}
	for _, s := range statuses {
		made[s.GetName()] = s
	}
	d.text(0, "Resource Claims:")
	for _, c := range claims {
		d.text(1, "%s:", c.GetName())
		if c.ResourceClaimName != nil {
			d.kv(2, "ResourceClaim", c.GetResourceClaimName())
			continue
		}
		d.kv(2, "ResourceClaimTemplate", c.GetResourceClaimTemplateName())
		switch s := made[c.GetName()]; {
		case s == nil:
			d.kv(2, "ResourceClaim", "<not created yet>")
		case s.ResourceClaimName == nil:
			d.kv(2, "ResourceClaim", "<none needed>")
		default:
			d.kv(2, "ResourceClaim", s.GetResourceClaimName())
		}
	}
}
