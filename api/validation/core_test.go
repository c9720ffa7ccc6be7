package validation_test

import (
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
		}, []string{"spec.volumes[0]", "exactly one"}},
		{"bad restart policy", func() v1.Object { p := pod(); p.Spec.RestartPolicy = "Sometimes"; return p }, []string{"spec.restartPolicy"}},
		{"toleration seconds without NoExecute", func() v1.Object {
			p := pod()
			p.Spec.Tolerations = []*v1.Toleration{{Key: "k", Operator: "Exists", Effect: "NoSchedule", TolerationSeconds: proto.Int64(5)}}
			return p
		}, []string{"spec.tolerations[0].tolerationSeconds"}},
		{"valid service", func() v1.Object { return service() }, nil},
		{"service no ports", func() v1.Object { s := service(); s.Spec.Ports = nil; return s }, []string{"spec.ports: required"}},
		{"service bad type", func() v1.Object { s := service(); s.Spec.Type = "LoadBalancer"; return s }, []string{"spec.type"}},
		{"nodePort on ClusterIP", func() v1.Object { s := service(); s.Spec.Ports[0].NodePort = 30080; return s }, []string{"spec.ports[0].nodePort", "only valid for type NodePort"}},
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
		{"namespace name", func() v1.Object { return &v1.Namespace{Metadata: &v1.ObjectMeta{Name: "a.b"}} }, []string{"metadata.name"}},
		{"node taint effect", func() v1.Object {
			return &v1.Node{Metadata: &v1.ObjectMeta{Name: "n1"}, Spec: &v1.NodeSpec{Taints: []*v1.Taint{{Key: "k", Effect: "Sometimes"}}}}
		}, []string{"spec.taints[0].effect"}},
		{"configmap key", func() v1.Object {
			return &v1.ConfigMap{Metadata: &v1.ObjectMeta{Name: "c", Namespace: "default"}, Data: map[string]string{"a/b": "x"}}
		}, []string{"data[a/b]"}},
	})
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
