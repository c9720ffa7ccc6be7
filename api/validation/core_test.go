package validation_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func pod() *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{
			Name: "c", Image: "nginx:1.25",
			Ports:     []*v1.ContainerPort{{Name: "http", ContainerPort: 80}},
			Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "250m", "memory": "64Mi"}, Limits: map[string]string{"cpu": "1", "memory": "128Mi"}},
		}}},
	}
}

func service() *v1.Service {
	return &v1.Service{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:     &v1.ServiceSpec{Selector: map[string]string{"app": "web"}, Ports: []*v1.ServicePort{{Port: 80, TargetPort: "http"}}},
	}
}

func TestCoreValidation(t *testing.T) {
	runValidation(t, []validationCase{
		{"valid pod", func() v1.Object { return pod() }, nil},
		{"no containers", func() v1.Object { p := pod(); p.Spec.Containers = nil; return p }, []string{"spec.containers: required"}},
		{"no image", func() v1.Object { p := pod(); p.Spec.Containers[0].Image = ""; return p }, []string{"spec.containers[0].image: required"}},
		{"bad name", func() v1.Object { p := pod(); p.Metadata.Name = "Web_1"; return p }, []string{"metadata.name", "DNS-1123"}},
		{"bad namespace", func() v1.Object { p := pod(); p.Metadata.Namespace = "a.b"; return p }, []string{"metadata.namespace"}},
		{"bad label", func() v1.Object { p := pod(); p.Metadata.Labels["-x"] = "y"; return p }, []string{"metadata.labels[-x]"}},
		{"bad quantity", func() v1.Object { p := pod(); p.Spec.Containers[0].Resources.Limits["memory"] = "12Zi"; return p },
			[]string{"spec.containers[0].resources.limits.memory", "not valid"}},
		{"request over limit", func() v1.Object { p := pod(); p.Spec.Containers[0].Resources.Requests["cpu"] = "2"; return p },
			[]string{"spec.containers[0].resources.requests.cpu", "less than or equal"}},
		{"unknown resource", func() v1.Object { p := pod(); p.Spec.Containers[0].Resources.Limits["gpu"] = "1"; return p }, []string{"unknown resource \"gpu\""}},
		{"bad port", func() v1.Object { p := pod(); p.Spec.Containers[0].Ports[0].ContainerPort = 70000; return p }, []string{"spec.containers[0].ports[0].containerPort"}},
		{"duplicate container", func() v1.Object {
			p := pod()
			p.Spec.Containers = append(p.Spec.Containers, proto.Clone(p.Spec.Containers[0]).(*v1.Container))
			return p
		},
			[]string{"spec.containers[1].name", "duplicated"}},
		{"probe without handler", func() v1.Object { p := pod(); p.Spec.Containers[0].LivenessProbe = &v1.Probe{}; return p },
			[]string{"spec.containers[0].livenessProbe", "exactly one"}},
		{"probe port name", func() v1.Object {
			p := pod()
			p.Spec.Containers[0].ReadinessProbe = &v1.Probe{HttpGet: &v1.HTTPGetAction{Port: "http"}}
			return p
		}, nil},
		{"mount without volume", func() v1.Object {
			p := pod()
			p.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{{Name: "data", MountPath: "/data"}}
			return p
		}, []string{"spec.containers[0].volumeMounts[0].name", "does not name a volume"}},
		{"volume two sources", func() v1.Object {
			p := pod()
			p.Spec.Volumes = []*v1.Volume{{Name: "v", EmptyDir: &v1.EmptyDirVolumeSource{}, HostPath: &v1.HostPathVolumeSource{Path: "/x"}}}
			return p
		}, []string{"spec.volumes[0]", "may not specify more than 1 volume type"}},
		{"bad restart policy", func() v1.Object { p := pod(); p.Spec.RestartPolicy = "Sometimes"; return p }, []string{"spec.restartPolicy"}},
		{"toleration seconds without NoExecute", func() v1.Object {
			p := pod()
			p.Spec.Tolerations = []*v1.Toleration{{Key: "k", Operator: "Exists", Effect: "NoSchedule", TolerationSeconds: proto.Int64(5)}}
			return p
		}, []string{"spec.tolerations[0].tolerationSeconds"}},
		{"valid service", func() v1.Object { return service() }, nil},
		{"service no ports", func() v1.Object { s := service(); s.Spec.Ports = nil; return s }, []string{"spec.ports: required"}},
		{"service bad type", func() v1.Object { s := service(); s.Spec.Type = "Ingress"; return s }, []string{"spec.type", "ExternalName"}},
		{"nodePort on ClusterIP", func() v1.Object { s := service(); s.Spec.Ports[0].NodePort = 30080; return s }, []string{"spec.ports[0].nodePort", "only valid for types NodePort and LoadBalancer"}},
		{"nodePort twice", func() v1.Object {
			s := service()
			s.Spec.Type = "NodePort"
			s.Spec.Ports[0].Name = "a"
			s.Spec.Ports[0].NodePort = 30001
			s.Spec.Ports = append(s.Spec.Ports, &v1.ServicePort{Name: "b", Port: 81, NodePort: 30001})
			return s
		}, []string{"spec.ports[1].nodePort", "used twice"}},
		{"multi-port needs names", func() v1.Object {
			s := service()
			s.Spec.Ports = append(s.Spec.Ports, &v1.ServicePort{Port: 443})
			return s
		}, []string{"spec.ports[0].name", "required when a service has more than one port"}},
		{"bad clusterIP", func() v1.Object { s := service(); s.Spec.ClusterIp = "10.96.0.300"; return s }, []string{"spec.clusterIP"}},
		{"load balancer", func() v1.Object {
			s := service()
			s.Spec.Type, s.Spec.ExternalTrafficPolicy, s.Spec.LoadBalancerIp = "LoadBalancer", "Local", "10.0.0.50"
			return s
		}, nil},
		{"loadBalancerIP on ClusterIP", func() v1.Object { s := service(); s.Spec.LoadBalancerIp = "10.0.0.50"; return s },
			[]string{"spec.loadBalancerIP", "only valid for type LoadBalancer"}},
		{"bad loadBalancerIP", func() v1.Object {
			s := service()
			s.Spec.Type, s.Spec.LoadBalancerIp = "LoadBalancer", "10.0.0"
			return s
		},
			[]string{"spec.loadBalancerIP", "not a valid IP"}},
		{"externalTrafficPolicy on ClusterIP", func() v1.Object { s := service(); s.Spec.ExternalTrafficPolicy = "Local"; return s },
			[]string{"spec.externalTrafficPolicy", "only valid for types NodePort and LoadBalancer"}},
		{"bad externalTrafficPolicy", func() v1.Object {
			s := service()
			s.Spec.Type, s.Spec.ExternalTrafficPolicy = "NodePort", "Nearest"
			return s
		},
			[]string{"spec.externalTrafficPolicy", `"Nearest" is not one of Cluster, Local`}},
		{"healthCheckNodePort without Local", func() v1.Object {
			s := service()
			s.Spec.Type, s.Spec.HealthCheckNodePort = "LoadBalancer", 30100
			return s
		}, []string{"spec.healthCheckNodePort", "externalTrafficPolicy Local"}},
		{"headless", func() v1.Object { s := service(); s.Spec.ClusterIp, s.Spec.Ports = "None", nil; return s }, nil},
		{"headless NodePort", func() v1.Object { s := service(); s.Spec.ClusterIp, s.Spec.Type = "None", "NodePort"; return s },
			[]string{"spec.clusterIP", "headless", "NodePort"}},
		{"external name", func() v1.Object {
			return &v1.Service{Metadata: &v1.ObjectMeta{Name: "db", Namespace: "default"},
				Spec: &v1.ServiceSpec{Type: "ExternalName", ExternalName: "db.example.com."}}
		}, nil},
		{"external name missing", func() v1.Object {
			return &v1.Service{Metadata: &v1.ObjectMeta{Name: "db", Namespace: "default"}, Spec: &v1.ServiceSpec{Type: "ExternalName"}}
		}, []string{"spec.externalName: required"}},
		{"external name bad", func() v1.Object {
			return &v1.Service{Metadata: &v1.ObjectMeta{Name: "db", Namespace: "default"},
				Spec: &v1.ServiceSpec{Type: "ExternalName", ExternalName: "DB_host"}}
		}, []string{"spec.externalName", "DNS-1123 subdomain"}},
		{"external name with clusterIP", func() v1.Object {
			return &v1.Service{Metadata: &v1.ObjectMeta{Name: "db", Namespace: "default"},
				Spec: &v1.ServiceSpec{Type: "ExternalName", ExternalName: "db.example.com", ClusterIp: "10.96.0.5"}}
		}, []string{"spec.clusterIP", "must be empty for type ExternalName"}},
		{"externalName on ClusterIP", func() v1.Object { s := service(); s.Spec.ExternalName = "x.example.com"; return s },
			[]string{"spec.externalName", "only valid for type ExternalName"}},
		{"IPv6 family", func() v1.Object { s := service(); s.Spec.IpFamilies = []string{"IPv6"}; return s },
			[]string{"spec.ipFamilies[0]", "IPv4-only"}},
		{"dual stack families", func() v1.Object {
			s := service()
			s.Spec.IpFamilies, s.Spec.IpFamilyPolicy = []string{"IPv4", "IPv6"}, "PreferDualStack"
			return s
		}, []string{"spec.ipFamilies[1]", "IPv4-only"}},
		{"old ipFamily IPv6", func() v1.Object { s := service(); s.Spec.IpFamily = "IPv6"; return s },
			[]string{"spec.ipFamilies[0]", "IPv4-only"}},
		{"RequireDualStack", func() v1.Object { s := service(); s.Spec.IpFamilyPolicy = "RequireDualStack"; return s },
			[]string{"spec.ipFamilyPolicy", "IPv4-only"}},
		{"PreferDualStack", func() v1.Object { s := service(); s.Spec.IpFamilyPolicy = "PreferDualStack"; return s }, nil},
		{"two clusterIPs", func() v1.Object {
			s := service()
			s.Spec.ClusterIp, s.Spec.ClusterIps = "10.96.0.5", []string{"10.96.0.5", "fd00::5"}
			return s
		}, []string{"spec.clusterIPs", "IPv4-only"}},
		{"ClientIP affinity", func() v1.Object { s := service(); s.Spec.SessionAffinity = "ClientIP"; return s },
			[]string{"spec.sessionAffinity", "not supported"}},
		{"namespace name", func() v1.Object { return &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "a.b"}} }, []string{"metadata.name"}},
		{"node taint effect", func() v1.Object {
			return &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}, Spec: &v1.NodeSpec{Taints: []*v1.Taint{{Key: "k", Effect: "Sometimes"}}}}
		}, []string{"spec.taints[0].effect"}},
		{"configmap key", func() v1.Object {
			return &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"a/b": "x"}}
		}, []string{"data[a/b]"}},
	})
}

// TestServiceDefaults: a single-stack IPv4 cluster's defaults, as
// Kubernetes fills them.
func TestServiceDefaults(t *testing.T) {
	k, _ := kinds.Lookup("Service")
	cases := []struct {
		name string
		spec *v1.ServiceSpec
		want string // the defaulted fields, as fmtServiceDefaults renders them
	}{
		{"ClusterIP", &v1.ServiceSpec{Ports: []*v1.ServicePort{{Port: 80}}},
			"type=ClusterIP families=[IPv4] policy=SingleStack itp=Cluster etp= alloc=<nil> targetPort=80"},
		{"LoadBalancer", &v1.ServiceSpec{Type: "LoadBalancer", Ports: []*v1.ServicePort{{Port: 80}}},
			"type=LoadBalancer families=[IPv4] policy=SingleStack itp=Cluster etp=Cluster alloc=true targetPort=80"},
		{"PreferDualStack stays, single family", &v1.ServiceSpec{IpFamilyPolicy: "PreferDualStack", Ports: []*v1.ServicePort{{Port: 80}}},
			"type=ClusterIP families=[IPv4] policy=PreferDualStack itp=Cluster etp= alloc=<nil> targetPort=80"},
		{"old ipFamily", &v1.ServiceSpec{IpFamily: "IPv4", Ports: []*v1.ServicePort{{Port: 80}}},
			"type=ClusterIP families=[IPv4] policy=SingleStack itp=Cluster etp= alloc=<nil> targetPort=80"},
		{"ExternalName", &v1.ServiceSpec{Type: "ExternalName", ExternalName: "example.com"},
			"type=ExternalName families=[] policy= itp= etp= alloc=<nil>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &v1.Service{Metadata: &v1.ObjectMeta{Name: "s", Namespace: "default"}, Spec: c.spec}
			k.Default(s)
			sp := s.Spec
			got := fmt.Sprintf("type=%s families=%v policy=%s itp=%s etp=%s alloc=%v", sp.Type, sp.IpFamilies, sp.IpFamilyPolicy,
				sp.InternalTrafficPolicy, sp.ExternalTrafficPolicy, fmtBool(sp.AllocateLoadBalancerNodePorts))
			for _, p := range sp.Ports {
				got += " targetPort=" + p.TargetPort
			}
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
			if sp.IpFamily != "" {
				t.Fatalf("ipFamily kept: %q", sp.IpFamily)
			}
			if err := k.Validate(s).Err("Service", "s"); err != nil {
				t.Fatalf("defaulted service refused: %v", err)
			}
		})
	}
}

func fmtBool(b *bool) string {
	if b == nil {
		return "<nil>"
	}
	return fmt.Sprint(*b)
}

// TestPodUpdate: a pod's spec is fixed once created but for images,
// tolerations and activeDeadlineSeconds; a bound pod keeps its node.
func TestPodUpdate(t *testing.T) {
	k, _ := kinds.Lookup("Pod")
	bound := func() *v1.Pod { p := pod(); p.Spec.NodeName = "n1"; return p }
	cases := []struct {
		name string
		old  func() *v1.Pod
		edit func(*v1.Pod)
		want string // "" allowed
	}{
		{"image", pod, func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:1.27" }, ""},
		{"tolerations", pod, func(p *v1.Pod) { p.Spec.Tolerations = []*v1.Toleration{{Key: "k", Operator: "Exists"}} }, ""},
		{"active deadline", pod, func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = proto.Int64(60) }, ""},
		{"node of an unbound pod", pod, func(p *v1.Pod) { p.Spec.NodeName = "n2" }, ""},
		{"labels", bound, func(p *v1.Pod) { p.Metadata.Labels["tier"] = "front" }, ""},
		{"node of a bound pod", bound, func(p *v1.Pod) { p.Spec.NodeName = "n2" },
			`Pod "web" is invalid: spec.nodeName: cannot be changed once the pod is bound (bound to "n1")`},
		{"command", bound, func(p *v1.Pod) { p.Spec.Containers[0].Command = []string{"sh"} },
			`Pod "web" is invalid: spec: pod updates may not change fields other than spec.containers[*].image, spec.tolerations and spec.activeDeadlineSeconds`},
		{"another container", pod, func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, &v1.Container{Name: "d", Image: "busybox"})
		}, "spec: pod updates may not change"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := c.old()
			next := proto.Clone(old).(*v1.Pod)
			c.edit(next)
			k.Default(old)
			k.Default(next)
			err := k.ValidateUpdate(old, next).Err("Pod", "web")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}
