package kinds

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// DefaultPod fills what Kubernetes fills: restart policy, grace period, DNS
// policy, pull policy by tag, port protocols and probe timings.
func DefaultPod(p *v1.Pod) {
	if p.Spec == nil {
		return
	}
	DefaultPodSpec(p.Spec)
	if p.Status == nil {
		p.Status = &v1.PodStatus{}
	}
	if p.Status.Phase == "" {
		p.Status.Phase = "Pending"
	}
}

// DefaultPodSpec defaults a pod spec (also the templates of controllers).
func DefaultPodSpec(s *v1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = "Always"
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = proto.Int64(30)
	}
	if s.DnsPolicy == "" {
		s.DnsPolicy = "ClusterFirst"
	}
	if s.SchedulerName == "" {
		s.SchedulerName = "default-scheduler"
	}
	for _, list := range [][]*v1.Container{s.InitContainers, s.Containers} {
		for _, c := range list {
			defaultContainer(c)
		}
	}
	for _, t := range s.Tolerations {
		if t.Operator == "" {
			t.Operator = "Equal"
		}
	}
}

func defaultContainer(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = "IfNotPresent"
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = "Always"
		}
	}
	for _, p := range c.Ports {
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
	}
	for _, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		if pr.TimeoutSeconds == 0 {
			pr.TimeoutSeconds = 1
		}
		if pr.PeriodSeconds == 0 {
			pr.PeriodSeconds = 10
		}
		if pr.SuccessThreshold == 0 {
			pr.SuccessThreshold = 1
		}
		if pr.FailureThreshold == 0 {
			pr.FailureThreshold = 3
		}
		if pr.HttpGet != nil && pr.HttpGet.Scheme == "" {
			pr.HttpGet.Scheme = "HTTP"
		}
		if pr.HttpGet != nil && pr.HttpGet.Path == "" {
			pr.HttpGet.Path = "/"
		}
	}
}

// imageTag returns the tag of an image reference, "latest" when none is
// given, and "" for a digest reference.
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		return ""
	}
	last := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return "latest"
}

func defaultNamespace(n *v1.Namespace) {
	if n.Status == nil {
		n.Status = &v1.NamespaceStatus{}
	}
	if n.Status.Phase == "" {
		n.Status.Phase = "Active"
	}
}

func defaultEvent(e *v1.Event) {
	if e.Type == "" {
		e.Type = "Normal"
	}
	if e.Count == 0 {
		e.Count = 1
	}
}

func defaultSecret(s *v1.Secret) {
	if s.Type == "" {
		s.Type = "Opaque"
	}
	// stringData is write-only: fold it into data.
	if len(s.StringData) > 0 {
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		for k, v := range s.StringData {
			s.Data[k] = []byte(v)
		}
		s.StringData = nil
	}
}

func defaultService(s *v1.Service) {
	if s.Spec == nil {
		return
	}
	if s.Spec.Type == "" {
		s.Spec.Type = "ClusterIP"
	}
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = "None"
	}
	for _, p := range s.Spec.Ports {
		if p.Protocol == "" {
			p.Protocol = "TCP"
		}
		if p.TargetPort == "" || p.TargetPort == "0" {
			p.TargetPort = itoa(p.Port)
		}
	}
}

func defaultEndpoints(e *v1.Endpoints) {
	for _, s := range e.Subsets {
		for _, p := range s.Ports {
			if p.Protocol == "" {
				p.Protocol = "TCP"
			}
		}
	}
}

func defaultReplicaSet(r *v1.ReplicaSet) {
	if r.Spec == nil {
		return
	}
	if r.Spec.Replicas == nil {
		r.Spec.Replicas = proto.Int32(1)
	}
	defaultTemplate(r.Spec.Template)
}

func defaultDeployment(d *v1.Deployment) {
	s := d.Spec
	if s == nil {
		return
	}
	if s.Replicas == nil {
		s.Replicas = proto.Int32(1)
	}
	if s.Strategy == nil {
		s.Strategy = &v1.DeploymentStrategy{}
	}
	if s.Strategy.Type == "" {
		s.Strategy.Type = "RollingUpdate"
	}
	if s.Strategy.Type == "RollingUpdate" {
		if s.Strategy.RollingUpdate == nil {
			s.Strategy.RollingUpdate = &v1.RollingUpdateDeployment{}
		}
		if s.Strategy.RollingUpdate.MaxSurge == "" {
			s.Strategy.RollingUpdate.MaxSurge = "25%"
		}
		if s.Strategy.RollingUpdate.MaxUnavailable == "" {
			s.Strategy.RollingUpdate.MaxUnavailable = "25%"
		}
	}
	if s.RevisionHistoryLimit == nil {
		s.RevisionHistoryLimit = proto.Int32(10)
	}
	if s.ProgressDeadlineSeconds == nil {
		s.ProgressDeadlineSeconds = proto.Int32(600)
	}
	defaultTemplate(s.Template)
}

func defaultTemplate(t *v1.PodTemplateSpec) {
	if t != nil && t.Spec != nil {
		DefaultPodSpec(t.Spec)
	}
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
