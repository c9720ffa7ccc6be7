package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

func resizable(req, lim map[string]string) *v1.Pod {
	return &v1.Pod{
		Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: &v1.PodSpec{Containers: []*v1.Container{{Name: "c", Image: "busybox",
			Resources: &v1.ResourceRequirements{Requests: req, Limits: lim}}}},
	}
}

func TestResizePolicyDefaultsAndValidation(t *testing.T) {
	k, _ := kinds.Lookup("Pod")
	p := resizable(map[string]string{"cpu": "100m"}, map[string]string{"memory": "64Mi"})
	p.Spec.InitContainers = []*v1.Container{
		{Name: "side", Image: "busybox", RestartPolicy: "Always", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "10m"}}},
		{Name: "init", Image: "busybox", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "10m"}}},
	}
	k.Default(p)
	got := p.Spec.Containers[0].ResizePolicy
	if len(got) != 2 || got[0].ResourceName != "cpu" || got[1].ResourceName != "memory" || got[0].RestartPolicy != "NotRequired" || got[1].RestartPolicy != "NotRequired" {
		t.Errorf("defaulted resizePolicy %v, want NotRequired for cpu and memory", got)
	}
	if len(p.Spec.InitContainers[0].ResizePolicy) != 1 || len(p.Spec.InitContainers[1].ResizePolicy) != 0 {
		t.Errorf("init containers' policies: sidecar %v, init %v; want cpu for the sidecar only", p.Spec.InitContainers[0].ResizePolicy, p.Spec.InitContainers[1].ResizePolicy)
	}
	bare := resizable(nil, nil)
	k.Default(bare)
	if len(bare.Spec.Containers[0].ResizePolicy) != 0 {
		t.Errorf("a container without resources got %v", bare.Spec.Containers[0].ResizePolicy)
	}

	cases := []struct {
		name string
		edit func(*v1.Pod)
		want string // "" valid
	}{
		{"restart container", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "memory", RestartPolicy: "RestartContainer"}}
		}, ""},
		{"unknown resource", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "storage", RestartPolicy: "NotRequired"}}
		}, `spec.containers[0].resizePolicy: Unsupported value: "storage": supported values: "cpu", "memory"`},
		{"unknown policy", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "Sometimes"}}
		}, `spec.containers[0].resizePolicy: Unsupported value: "Sometimes": supported values: "NotRequired", "RestartContainer"`},
		{"no resource", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{RestartPolicy: "NotRequired"}}
		}, `spec.containers[0].resizePolicy: Required value`},
		{"duplicate", func(p *v1.Pod) {
			p.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "NotRequired"}, {ResourceName: "cpu", RestartPolicy: "RestartContainer"}}
		}, `spec.containers[0].resizePolicy[1]: Duplicate value: "cpu"`},
		{"restart with restartPolicy Never", func(p *v1.Pod) {
			p.Spec.RestartPolicy = "Never"
			p.Spec.Containers[0].ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "RestartContainer"}}
		}, "must be 'NotRequired' when `restartPolicy` is 'Never'"},
		{"init container", func(p *v1.Pod) {
			p.Spec.InitContainers = []*v1.Container{{Name: "i", Image: "busybox", ResizePolicy: []*v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "NotRequired"}}}}
		}, `spec.initContainers[0].resizePolicy: Invalid value: [{cpu NotRequired}]: must not be set for init containers`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := resizable(map[string]string{"cpu": "100m"}, nil)
			c.edit(p)
			err := validation.Pod(p).Err("Pod", "web")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

func TestPodResize(t *testing.T) {
	k, _ := kinds.Lookup("Pod")
	burstable := func() *v1.Pod {
		return resizable(map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "200m", "memory": "64Mi"})
	}
	guaranteed := func() *v1.Pod {
		p := resizable(map[string]string{"cpu": "100m", "memory": "32Mi"}, map[string]string{"cpu": "100m", "memory": "32Mi"})
		p.Status = &v1.PodStatus{QosClass: "Guaranteed"}
		return p
	}
	cases := []struct {
		name string
		old  func() *v1.Pod
		edit func(*v1.Pod)
		want string // "" allowed
	}{
		{"raise cpu and memory limits", burstable, func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits = map[string]string{"cpu": "500m", "memory": "128Mi"}
		}, ""},
		// Kubernetes 1.34+: a memory limit may go down with NotRequired (the kubelet checks usage).
		{"lower the memory limit", burstable, func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits["memory"] = "48Mi" }, ""},
		{"guaranteed stays guaranteed", guaranteed, func(p *v1.Pod) {
			r := p.Spec.Containers[0].Resources
			r.Requests["cpu"], r.Limits["cpu"] = "300m", "300m"
		}, ""},
		{"guaranteed to burstable", guaranteed, func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = "300m" },
			`Pod "web" is invalid: spec: Invalid value: "Guaranteed": Pod QOS Class may not change as a result of resizing`},
		{"best effort gains a request", func() *v1.Pod { return resizable(nil, nil) }, func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = &v1.ResourceRequirements{Requests: map[string]string{"memory": "40Mi"}}
		}, "Pod QOS Class may not change as a result of resizing"},
		{"remove a limit", burstable, func(p *v1.Pod) { delete(p.Spec.Containers[0].Resources.Limits, "memory") },
			"spec.containers[0].resources.limits: Forbidden: resource limits cannot be removed"},
		{"remove a request", func() *v1.Pod {
			return resizable(map[string]string{"cpu": "100m", "memory": "32Mi"}, nil)
		}, func(p *v1.Pod) { delete(p.Spec.Containers[0].Resources.Requests, "cpu") },
			"spec.containers[0].resources.requests: Forbidden: resource requests cannot be removed"},
		{"ephemeral storage", burstable, func(p *v1.Pod) { p.Spec.Containers[0].Resources.Requests["ephemeral-storage"] = "1Gi" },
			"spec: Forbidden: only cpu and memory resources are mutable"},
		{"resize policy", burstable, func(p *v1.Pod) { p.Spec.Containers[0].ResizePolicy[0].RestartPolicy = "RestartContainer" },
			"spec: Forbidden: only cpu and memory resources are mutable"},
		{"image", burstable, func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx" },
			"spec: Forbidden: only cpu and memory resources are mutable"},
		{"static pod", func() *v1.Pod {
			p := burstable()
			p.Metadata.Annotations = map[string]string{"kubernetes.io/config.mirror": "x"}
			return p
		}, func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = "1" }, "Forbidden: static pods cannot be resized"},
		{"node without resize", func() *v1.Pod {
			p := burstable()
			p.Status = &v1.PodStatus{ContainerStatuses: []*v1.ContainerStatus{{Name: "c", State: &v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
			return p
		}, func(p *v1.Pod) { p.Spec.Containers[0].Resources.Limits["cpu"] = "1" }, "spec: Forbidden: Pod running on node without support for resize"},
		{"non-sidecar init container", func() *v1.Pod {
			p := burstable()
			p.Spec.InitContainers = []*v1.Container{{Name: "i", Image: "busybox", Resources: &v1.ResourceRequirements{Requests: map[string]string{"cpu": "10m"}}}}
			return p
		}, func(p *v1.Pod) { p.Spec.InitContainers[0].Resources.Requests["cpu"] = "20m" },
			"spec.initContainers[0].resources: Forbidden: resources for non-sidecar init containers are immutable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := c.old()
			k.Default(old)
			next := proto.Clone(old).(*v1.Pod)
			c.edit(next)
			k.Default(next)
			err := validation.PodResize(old, next).Err("Pod", "web")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want %q", err, c.want)
			}
			// A plain update may never change resources.
			if !proto.Equal(old.Spec.Containers[0].Resources, next.Spec.Containers[0].Resources) {
				if err := validation.PodUpdate(old, next).Err("Pod", "web"); err == nil {
					t.Errorf("a pod update changed resources")
				}
			}
		})
	}
}
