package validation

import (
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Pod validates a pod.
func Pod(p *v1.Pod) Errs {
	var errs Errs
	ObjectMeta(&errs, p.Metadata, true, DNSSubdomain)
	PodSpec(&errs, "spec", p.Spec)
	podResourceClaimStatuses(&errs, p)
	return errs
}

// PodUpdate enforces what Kubernetes enforces on an update of a pod (old
// is stored, new its validated replacement, so both have a spec): the spec
// is fixed once created but for container images, tolerations and
// activeDeadlineSeconds, and spec.nodeName cannot change once the pod is
// bound.
func PodUpdate(old, new *v1.Pod) Errs {
	var errs Errs
	a := proto.Clone(old.Spec).(*v1.PodSpec)
	b := proto.Clone(new.Spec).(*v1.PodSpec)
	if a.NodeName != "" && b.NodeName != a.NodeName {
		errs.Add("spec.nodeName", "cannot be changed once the pod is bound (bound to %q)", a.NodeName)
		return errs
	}
	if a.NodeName == "" {
		b.NodeName = ""
	}
	for i := range a.Containers {
		if i < len(b.Containers) {
			a.Containers[i].Image = b.Containers[i].Image
			if len(a.Containers[i].ResizePolicy) == 0 {
				// Stored before resize policies were defaulted.
				a.Containers[i].ResizePolicy = b.Containers[i].ResizePolicy
			}
		}
	}
	for i := range a.InitContainers {
		if i < len(b.InitContainers) && len(a.InitContainers[i].ResizePolicy) == 0 {
			a.InitContainers[i].ResizePolicy = b.InitContainers[i].ResizePolicy
		}
	}
	// Ephemeral containers change through pods/ephemeralcontainers only
	// (PodEphemeralContainersUpdate), never with the pod.
	if !slices.EqualFunc(a.EphemeralContainers, b.EphemeralContainers, func(x, y *v1.EphemeralContainer) bool { return proto.Equal(x, y) }) {
		errs.Add("spec.ephemeralContainers", "Forbidden: may be changed only through the pods/ephemeralcontainers subresource")
		return errs
	}
	a.Tolerations = b.Tolerations
	a.ActiveDeadlineSeconds = b.ActiveDeadlineSeconds
	if !proto.Equal(a, b) {
		errs.Add("spec", "pod updates may not change fields other than spec.containers[*].image, spec.tolerations and spec.activeDeadlineSeconds")
	}
	return errs
}

// PodTemplate validates a ReplicaSet's or Deployment's pod template.
func PodTemplate(errs *Errs, path string, t *v1.PodTemplateSpec) {
	podTemplate(errs, path, t, "Always")
}

// podTemplate validates a controller's pod template whose restartPolicy
// must be one of restartPolicies (Always for the apps kinds; OnFailure or
// Never for Jobs).
func podTemplate(errs *Errs, path string, t *v1.PodTemplateSpec, restartPolicies ...string) {
	if t == nil {
		errs.Add(path, "required")
		return
	}
	if t.Metadata != nil {
		Labels(errs, path+".metadata.labels", t.Metadata.Labels)
		Annotations(errs, path+".metadata.annotations", t.Metadata.Annotations)
	}
	PodSpec(errs, path+".spec", t.Spec)
	if len(t.GetSpec().GetEphemeralContainers()) > 0 {
		errs.Add(path+".spec.ephemeralContainers", "Forbidden: ephemeral containers not allowed in pod template")
	}
	if rp := t.GetSpec().GetRestartPolicy(); t.Spec != nil && !slices.Contains(restartPolicies, rp) && (rp != "" || restartPolicies[0] != "Always") {
		if len(restartPolicies) == 1 {
			errs.Add(path+".spec.restartPolicy", "%q: only %s is supported for controllers", t.Spec.RestartPolicy, restartPolicies[0])
		} else {
			errs.Add(path+".spec.restartPolicy", "Unsupported value: %q: supported values: %q", t.Spec.RestartPolicy, restartPolicies)
		}
	}
}

// PodSpec validates a pod spec.
func PodSpec(errs *Errs, path string, s *v1.PodSpec) {
	if s == nil {
		errs.Add(path, "required")
		return
	}
	if len(s.Containers) == 0 {
		errs.Add(path+".containers", "required: at least one container")
	}
	if n := len(s.Containers) + len(s.InitContainers) + len(s.EphemeralContainers); n > MaxContainers {
		errs.Add(path+".containers", "%d containers (with initContainers and ephemeralContainers) is more than the limit of %d per pod", n, MaxContainers)
		return
	}
	vols := map[string]bool{}
	for i, v := range s.Volumes {
		volume(errs, fmt.Sprintf("%s.volumes[%d]", path, i), v, vols)
	}
	names := map[string]bool{}
	hostPorts := map[string]bool{}
	for i, c := range s.InitContainers {
		container(errs, fmt.Sprintf("%s.initContainers[%d]", path, i), c, kindOf(c, true), s.TerminationGracePeriodSeconds, names, vols, hostPorts)
		resizePolicy(errs, fmt.Sprintf("%s.initContainers[%d]", path, i), c, kindOf(c, true), s.RestartPolicy)
	}
	for i, c := range s.Containers {
		container(errs, fmt.Sprintf("%s.containers[%d]", path, i), c, appContainer, s.TerminationGracePeriodSeconds, names, vols, hostPorts)
		resizePolicy(errs, fmt.Sprintf("%s.containers[%d]", path, i), c, appContainer, s.RestartPolicy)
	}
	fileKeyRefVolumes(errs, path, s)
	ephemeralContainers(errs, path+".ephemeralContainers", s, names, vols)
	podSecurityContext(errs, path+".securityContext", s)
	if s.RestartPolicy != "" {
		OneOf(errs, path+".restartPolicy", s.RestartPolicy, "Always", "OnFailure", "Never")
	}
	if s.ServiceAccountName != "" {
		DNSSubdomain(errs, path+".serviceAccountName", s.ServiceAccountName)
	}
	if s.PriorityClassName != "" {
		DNSSubdomain(errs, path+".priorityClassName", s.PriorityClassName)
	}
	preemptionPolicy(errs, path+".preemptionPolicy", s.PreemptionPolicy)
	imagePullSecrets(errs, path+".imagePullSecrets", s.ImagePullSecrets)
	podDNS(errs, path, s)
	if s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds < 0 {
		errs.Add(path+".terminationGracePeriodSeconds", "must be >= 0")
	}
	Labels(errs, path+".nodeSelector", s.NodeSelector)
	for i, t := range s.Tolerations {
		toleration(errs, fmt.Sprintf("%s.tolerations[%d]", path, i), t)
	}
	if s.NodeName != "" {
		DNSSubdomain(errs, path+".nodeName", s.NodeName)
	}
	if s.Hostname != "" {
		DNSLabel(errs, path+".hostname", s.Hostname)
	}
	podScheduling(errs, path, s)
	podResourceClaims(errs, path, s)
	podLevelResources(errs, path, s)
	hostUsers(errs, path, s)
}

func container(errs *Errs, path string, c *v1.Container, kind containerKind, grace *int64, names, vols, hostPorts map[string]bool) {
	DNSLabel(errs, path+".name", c.Name)
	if names[c.Name] {
		errs.Add(path+".name", "%q is duplicated", c.Name)
	}
	names[c.Name] = true
	if c.Image == "" {
		errs.Add(path+".image", "required")
	}
	if c.ImagePullPolicy != "" {
		OneOf(errs, path+".imagePullPolicy", c.ImagePullPolicy, "Always", "IfNotPresent", "Never")
	}
	for i, e := range c.Env {
		ep := fmt.Sprintf("%s.env[%d]", path, i)
		if e.Name == "" || !envNameRE.MatchString(e.Name) {
			errs.Add(ep+".name", "%q must be a valid environment variable name", e.Name)
		}
		if e.ValueFrom != nil {
			n := 0
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				n++
				if r.Name == "" || r.Key == "" {
					errs.Add(ep+".valueFrom.configMapKeyRef", "name and key are required")
				}
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				n++
				if r.Name == "" || r.Key == "" {
					errs.Add(ep+".valueFrom.secretKeyRef", "name and key are required")
				}
			}
			if r := e.ValueFrom.FieldRef; r != nil {
				n++
				apiVersion(errs, ep+".valueFrom.fieldRef.apiVersion", r.ApiVersion)
				fieldPath(errs, ep+".valueFrom.fieldRef.fieldPath", r.FieldPath, envFieldPaths)
			}
			if r := e.ValueFrom.ResourceFieldRef; r != nil {
				n++
				resourceFieldRef(errs, ep+".valueFrom.resourceFieldRef", r, false)
			}
			if r := e.ValueFrom.FileKeyRef; r != nil {
				n++
				fileKeyRef(errs, ep+".valueFrom.fileKeyRef", r)
			}
			if n != 1 {
				errs.Add(ep+".valueFrom", "exactly one of configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef or fileKeyRef must be set")
			}
			if e.Value != "" {
				errs.Add(ep+".value", "must be empty when valueFrom is set")
			}
		}
	}
	portNames := map[string]bool{}
	for i, p := range c.Ports {
		pp := fmt.Sprintf("%s.ports[%d]", path, i)
		Port(errs, pp+".containerPort", p.ContainerPort)
		if p.HostPort != 0 {
			Port(errs, pp+".hostPort", p.HostPort)
			key := p.Protocol + "/" + strconv.Itoa(int(p.HostPort))
			if hostPorts[key] {
				errs.Add(pp+".hostPort", "%d/%s is used twice in this pod", p.HostPort, p.Protocol)
			}
			hostPorts[key] = true
		}
		if p.Protocol != "" {
			OneOf(errs, pp+".protocol", p.Protocol, "TCP", "UDP")
		}
		if p.Name != "" {
			if len(p.Name) > 15 || !portNameRE.MatchString(p.Name) {
				errs.Add(pp+".name", "%q must be at most 15 lower-case alphanumerics or '-'", p.Name)
			}
			if portNames[p.Name] {
				errs.Add(pp+".name", "%q is duplicated", p.Name)
			}
			portNames[p.Name] = true
		}
	}
	resources(errs, path+".resources", c.Resources)
	for i, m := range c.VolumeMounts {
		mp := fmt.Sprintf("%s.volumeMounts[%d]", path, i)
		if !vols[m.Name] {
			errs.Add(mp+".name", "%q does not name a volume of this pod", m.Name)
		}
		if m.MountPath == "" || m.MountPath[0] != '/' {
			errs.Add(mp+".mountPath", "must be an absolute path")
		}
		volumeMountPropagation(errs, mp, m, c.GetSecurityContext().GetPrivileged())
	}
	containerKindFields(errs, path, c, kind, grace)
	containerSecurityContext(errs, path+".securityContext", c.SecurityContext)
}

// resourceNames are the resources a container may request.
var resourceNames = map[string]bool{"cpu": true, "memory": true, "ephemeral-storage": true}

func resources(errs *Errs, path string, r *v1.ResourceRequirements) {
	if r == nil {
		return
	}
	parsed := map[string]map[string]resource.Quantity{"requests": {}, "limits": {}}
	for section, m := range map[string]map[string]string{"requests": r.Requests, "limits": r.Limits} {
		for name, v := range m {
			fp := fmt.Sprintf("%s.%s.%s", path, section, name)
			if !resourceNames[name] {
				errs.Add(fp, "unknown resource %q (cpu, memory or ephemeral-storage)", name)
				continue
			}
			q, err := resource.Parse(v)
			if err != nil {
				errs.Add(fp, "%v", err)
				continue
			}
			parsed[section][name] = q
		}
	}
	for name, req := range parsed["requests"] {
		if lim, ok := parsed["limits"][name]; ok && req.Cmp(lim) > 0 {
			errs.Add(fmt.Sprintf("%s.requests.%s", path, name), "%s must be less than or equal to the %s limit %s", r.Requests[name], name, r.Limits[name])
		}
	}
}

func toleration(errs *Errs, path string, t *v1.Toleration) {
	if t.Operator != "" {
		OneOf(errs, path+".operator", t.Operator, "Equal", "Exists")
	}
	if t.Operator == "Exists" && t.Value != "" {
		errs.Add(path+".value", "must be empty when operator is Exists")
	}
	if t.Key == "" && t.Operator != "Exists" {
		errs.Add(path+".key", "required unless operator is Exists")
	}
	if t.Effect != "" {
		OneOf(errs, path+".effect", t.Effect, "NoSchedule", "PreferNoSchedule", "NoExecute")
	}
	if t.TolerationSeconds != nil && t.Effect != "NoExecute" {
		errs.Add(path+".tolerationSeconds", "only valid with effect NoExecute")
	}
}
