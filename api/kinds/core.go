// The core group (apiVersion v1): its kinds and their defaults.

package kinds

import (
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/quota"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// coreKinds is the core group, apiVersion v1.
var coreKinds = []*Kind{
	{Name: "Namespace", Plural: "namespaces", Short: []string{"ns"}, APIVersion: "v1",
		New: func() v1.Object { return &v1.Namespace{} }, Default: typedDefault(defaultNamespace), Validate: typed(validation.Namespace)},
	{Name: "Node", Plural: "nodes", Short: []string{"no"}, APIVersion: "v1",
		New: func() v1.Object { return &v1.Node{} }, Default: noDefault, Validate: typed(validation.Node),
		ValidateUpdate: typedUpdate(validation.NodeUpdate)},
	{Name: "Pod", Plural: "pods", Short: []string{"po"}, Categories: []string{"all"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Pod{} }, Default: typedDefault(DefaultPod), Validate: typed(validation.Pod),
		ValidateCreate: typed(validation.PodCreate), ValidateUpdate: typedUpdate(validation.PodUpdate)},
	{Name: "Event", Plural: "events", Short: []string{"ev"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Event{} }, Default: typedDefault(defaultEvent), Validate: typed(validation.Event)},
	{Name: "ConfigMap", Plural: "configmaps", Short: []string{"cm"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.ConfigMap{} }, Default: noDefault, Validate: typed(validation.ConfigMap),
		ValidateUpdate: typedUpdate(validation.ConfigMapUpdate)},
	{Name: "Secret", Plural: "secrets", APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Secret{} }, Default: typedDefault(defaultSecret), Validate: typed(validation.Secret),
		ValidateUpdate: typedUpdate(validation.SecretUpdate)},
	{Name: "Service", Plural: "services", Short: []string{"svc"}, Categories: []string{"all"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Service{} }, Default: typedDefault(defaultService), Validate: typed(validation.Service)},
	{Name: "Endpoints", Plural: "endpoints", Short: []string{"ep"}, APIVersion: "v1", Namespaced: true,
		New: func() v1.Object { return &v1.Endpoints{} }, Default: typedDefault(defaultEndpoints), Validate: typed(validation.Endpoints)},
}

// DefaultPod fills what Kubernetes fills: restart policy, grace period, DNS
// policy, pull policy by tag, port protocols and probe timings.
func DefaultPod(p *v1.Pod) {
	if p.Spec == nil {
		return
	}
	DefaultPodSpec(p.Spec)
	// A container that sets a limit but no request for a resource requests
	// its limit (Kubernetes' pod defaulting; templates are left alone), so
	// the scheduler, the LimitRanger and quotas see what it will get.
	for _, list := range [][]*v1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			r := c.GetResources()
			for name, lim := range r.GetLimits() {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = map[string]string{}
					}
					r.Requests[name] = lim
				}
			}
		}
	}
	defaultPodRequests(p.Spec)
	for _, c := range p.Spec.Containers {
		defaultResizePolicy(c)
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy == "Always" {
			defaultResizePolicy(c)
		}
	}
	if p.Status == nil {
		p.Status = &v1.PodStatus{}
	}
	if p.Status.Phase == "" {
		p.Status.Phase = "Pending"
	}
	if p.Status.QosClass == "" {
		// As Kubernetes' pod strategy sets it on create; it never changes.
		p.Status.QosClass = resource.PodQOSClass(p.Spec)
	}
}

// defaultPodRequests is Kubernetes' defaultPodRequests (PodLevelResources):
// when a pod sets pod-level limits, each pod-level request it leaves unset
// defaults to the containers' aggregate request of that resource (cpu and
// memory: the overcommittable ones), else to the pod-level limit. Pods
// without pod-level limits are left alone.
func defaultPodRequests(s *v1.PodSpec) {
	r := s.GetResources()
	if len(r.GetLimits()) == 0 {
		return
	}
	if r.Requests == nil {
		r.Requests = map[string]string{}
	}
	for name, q := range resource.AggregateContainerRequests(s) {
		if _, ok := r.Requests[name]; !ok && (name == "cpu" || name == "memory") {
			r.Requests[name] = quota.Format(name, q)
		}
	}
	for name, lim := range r.Limits {
		if _, ok := r.Requests[name]; !ok && resource.IsSupportedPodLevelResource(name) {
			r.Requests[name] = lim
		}
	}
	if len(r.Requests) == 0 {
		r.Requests = nil
	}
}

// defaultResizePolicy gives c a NotRequired resize policy for cpu and for
// memory when it requests or limits that resource and names no policy for
// it (Kubernetes' setDefaultResizePolicy: pods only, app containers and
// sidecars).
func defaultResizePolicy(c *v1.Container) {
	r := c.GetResources()
	for _, name := range []string{"cpu", "memory"} {
		_, req := r.GetRequests()[name]
		_, lim := r.GetLimits()[name]
		if !req && !lim {
			continue
		}
		named := false
		for _, p := range c.ResizePolicy {
			named = named || p.ResourceName == name
		}
		if !named {
			c.ResizePolicy = append(c.ResizePolicy, &v1.ContainerResizePolicy{ResourceName: name, RestartPolicy: "NotRequired"})
		}
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
	for _, e := range s.EphemeralContainers {
		defaultEphemeralContainer(e)
	}
	for _, t := range s.Tolerations {
		if t.Operator == "" {
			t.Operator = "Equal"
		}
	}
	for _, v := range s.Volumes {
		defaultVolume(v)
	}
	for _, list := range [][]*v1.Container{s.InitContainers, s.Containers} {
		for _, c := range list {
			for _, e := range c.Env {
				defaultFieldSelector(e.GetValueFrom().GetFieldRef())
			}
		}
	}
}

// DefaultVolumeMode is the mode of the files of configMap, secret,
// downwardAPI and projected volumes that set none (Kubernetes' 0644).
const DefaultVolumeMode = 0o644

// defaultVolume fills what Kubernetes fills in volume sources: an image
// volume's pullPolicy, the file modes, a token's lifetime, the field selectors' apiVersion (a
// resourceFieldRef's divisor stays unset: it means 1, as Kubernetes' zero
// Quantity does).
func defaultVolume(v *v1.Volume) {
	mode := func(m **int32) {
		if *m == nil {
			*m = proto.Int32(DefaultVolumeMode)
		}
	}
	downward := func(items []*v1.DownwardAPIVolumeFile) {
		for _, it := range items {
			defaultFieldSelector(it.FieldRef)
		}
	}
	switch {
	case v.Image != nil:
		// As a container's imagePullPolicy (SetDefaults_ImageVolumeSource).
		if v.Image.PullPolicy == "" {
			v.Image.PullPolicy = "IfNotPresent"
			if imageTag(v.Image.Reference) == "latest" {
				v.Image.PullPolicy = "Always"
			}
		}
	case v.ConfigMap != nil:
		mode(&v.ConfigMap.DefaultMode)
	case v.Secret != nil:
		mode(&v.Secret.DefaultMode)
	case v.DownwardApi != nil:
		mode(&v.DownwardApi.DefaultMode)
		downward(v.DownwardApi.Items)
	case v.Projected != nil:
		mode(&v.Projected.DefaultMode)
		for _, src := range v.Projected.Sources {
			if t := src.ServiceAccountToken; t != nil && t.ExpirationSeconds == nil {
				t.ExpirationSeconds = proto.Int64(DefaultTokenExpirationSeconds)
			}
			if d := src.DownwardApi; d != nil {
				downward(d.Items)
			}
		}
	}
}

func defaultFieldSelector(f *v1.ObjectFieldSelector) {
	if f != nil && f.ApiVersion == "" {
		f.ApiVersion = "v1"
	}
}

// defaultEphemeralContainer fills what Kubernetes fills in an ephemeral
// container: the pull policy and termination message fields as a
// container's (it has no ports or probes to default).
func defaultEphemeralContainer(e *v1.EphemeralContainer) {
	c := &v1.Container{Image: e.Image, ImagePullPolicy: e.ImagePullPolicy, TerminationMessagePath: e.TerminationMessagePath, TerminationMessagePolicy: e.TerminationMessagePolicy}
	defaultContainer(c)
	e.ImagePullPolicy, e.TerminationMessagePath, e.TerminationMessagePolicy = c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy
	for _, env := range e.Env {
		defaultFieldSelector(env.GetValueFrom().GetFieldRef())
	}
}

func defaultContainer(c *v1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = "IfNotPresent"
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = "Always"
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = "/dev/termination-log"
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = "File"
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

// NamespaceNameLabel is the label every namespace has, its name (set by
// the apiserver as Kubernetes', so a namespaceSelector can pick a
// namespace by name).
const NamespaceNameLabel = "kubernetes.io/metadata.name"

func defaultNamespace(n *v1.Namespace) {
	if m := v1.Meta(n); m.Name != "" {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		m.Labels[NamespaceNameLabel] = m.Name
	}
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

// defaultService fills what Kubernetes fills for a single-stack IPv4
// cluster: the type, session affinity, traffic policies, IP families,
// node-port allocation of LoadBalancers, port protocols and target ports;
// clusterIP and clusterIPs mirror each other; the old ipFamily spelling
// becomes ipFamilies.
func defaultService(s *v1.Service) {
	sp := s.Spec
	if sp == nil {
		return
	}
	if sp.Type == "" {
		sp.Type = "ClusterIP"
	}
	if sp.SessionAffinity == "" {
		sp.SessionAffinity = "None"
	}
	external := sp.Type == "NodePort" || sp.Type == "LoadBalancer"
	if external && sp.ExternalTrafficPolicy == "" {
		sp.ExternalTrafficPolicy = "Cluster"
	}
	if sp.Type == "LoadBalancer" && sp.AllocateLoadBalancerNodePorts == nil {
		sp.AllocateLoadBalancerNodePorts = proto.Bool(true)
	}
	if sp.IpFamily != "" {
		if len(sp.IpFamilies) == 0 {
			sp.IpFamilies = []string{sp.IpFamily}
		}
		sp.IpFamily = ""
	}
	if sp.ClusterIp == "" && len(sp.ClusterIps) > 0 {
		sp.ClusterIp = sp.ClusterIps[0]
	}
	if sp.ClusterIp != "" && len(sp.ClusterIps) == 0 {
		sp.ClusterIps = []string{sp.ClusterIp}
	}
	if sp.Type != "ExternalName" {
		if sp.InternalTrafficPolicy == "" {
			sp.InternalTrafficPolicy = "Cluster"
		}
		if len(sp.IpFamilies) == 0 {
			sp.IpFamilies = []string{"IPv4"}
		}
		if sp.IpFamilyPolicy == "" {
			sp.IpFamilyPolicy = "SingleStack"
		}
	}
	for _, p := range sp.Ports {
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

func itoa(n int32) string { return strconv.Itoa(int(n)) }
