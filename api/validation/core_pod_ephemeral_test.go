package validation_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

func debugger() *v1.EphemeralContainer {
	return &v1.EphemeralContainer{Name: "debugger", Image: "busybox:1.36", Command: []string{"sh"}, Stdin: true, Tty: true, TargetContainerName: "c"}
}

func TestEphemeralContainerValidation(t *testing.T) {
	with := func(f func(e *v1.EphemeralContainer)) func() v1.Object {
		return func() v1.Object {
			p := pod()
			e := debugger()
			f(e)
			p.Spec.EphemeralContainers = []*v1.EphemeralContainer{e}
			return p
		}
	}
	const e0 = "spec.ephemeralContainers[0]"
	runValidation(t, []validationCase{
		{"valid", with(func(*v1.EphemeralContainer) {}), nil},
		{"no target", with(func(e *v1.EphemeralContainer) { e.TargetContainerName = "" }), nil},
		{"empty resources", with(func(e *v1.EphemeralContainer) { e.Resources = &v1.ResourceRequirements{} }), nil},
		{"ports", with(func(e *v1.EphemeralContainer) { e.Ports = []*v1.ContainerPort{{ContainerPort: 80}} }),
			[]string{e0 + ".ports: Forbidden: cannot be set for an Ephemeral Container"}},
		{"resources", with(func(e *v1.EphemeralContainer) {
			e.Resources = &v1.ResourceRequirements{Limits: map[string]string{"cpu": "1"}}
		}),
			[]string{e0 + ".resources: Forbidden: cannot be set for an Ephemeral Container"}},
		{"probes", with(func(e *v1.EphemeralContainer) {
			p := &v1.Probe{Exec: &v1.ExecAction{Command: []string{"true"}}}
			e.LivenessProbe, e.ReadinessProbe, e.StartupProbe = p, p, p
		}), []string{e0 + ".livenessProbe: Forbidden: cannot be set for an Ephemeral Container",
			e0 + ".readinessProbe: Forbidden: cannot be set for an Ephemeral Container", e0 + ".startupProbe: Forbidden: cannot be set for an Ephemeral Container"}},
		{"lifecycle", with(func(e *v1.EphemeralContainer) {
			e.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 1}}}
		}), []string{e0 + ".lifecycle: Forbidden: cannot be set for an Ephemeral Container"}},
		{"resizePolicy", with(func(e *v1.EphemeralContainer) {
			e.ResizePolicy = []*v1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: "NotRequired"}}
		}), []string{e0 + ".resizePolicy: Forbidden: cannot be set for an Ephemeral Container"}},
		{"restartPolicy", with(func(e *v1.EphemeralContainer) { e.RestartPolicy = "Always" }),
			[]string{e0 + ".restartPolicy: Forbidden: cannot be set for an Ephemeral Container"}},
		{"subPath", with(func(e *v1.EphemeralContainer) {
			e.VolumeMounts = []*v1.VolumeMount{{Name: "data", MountPath: "/d", SubPath: "x"}}
		}),
			[]string{e0 + ".volumeMounts[0].subPath: Forbidden: cannot be set for an Ephemeral Container", e0 + ".volumeMounts[0].name: \"data\" does not name a volume"}},
		{"name taken by a container", with(func(e *v1.EphemeralContainer) { e.Name = "c" }), []string{e0 + ".name: \"c\" is duplicated"}},
		{"bad name", with(func(e *v1.EphemeralContainer) { e.Name = "Debug_1" }), []string{e0 + ".name"}},
		{"no image", with(func(e *v1.EphemeralContainer) { e.Image = "" }), []string{e0 + ".image: required"}},
		{"unknown target", with(func(e *v1.EphemeralContainer) { e.TargetContainerName = "nope" }), []string{e0 + `.targetContainerName: Not found: "nope"`}},
		{"bad env", with(func(e *v1.EphemeralContainer) { e.Env = []*v1.EnvVar{{Name: "1 x"}} }), []string{e0 + ".env[0].name"}},
		{"bad pull policy", with(func(e *v1.EphemeralContainer) { e.ImagePullPolicy = "Sometimes" }), []string{e0 + ".imagePullPolicy"}},
		{"targets another ephemeral container", func() v1.Object {
			p := pod()
			a, b := debugger(), debugger()
			b.Name, b.TargetContainerName = "second", "debugger"
			p.Spec.EphemeralContainers = []*v1.EphemeralContainer{a, b}
			return p
		}, []string{"spec.ephemeralContainers[1].targetContainerName: Not found: \"debugger\""}},
		{"in a template", func() v1.Object {
			p := pod()
			p.Spec.EphemeralContainers = []*v1.EphemeralContainer{debugger()}
			return &v1.Deployment{Metadata: &v1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: &v1.DeploymentSpec{
				Selector: &v1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: &v1.PodTemplateSpec{Metadata: &v1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: p.Spec}}}
		}, []string{"spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"}},
	})
}

func TestEphemeralContainerDefaults(t *testing.T) {
	p := pod()
	p.Spec.EphemeralContainers = []*v1.EphemeralContainer{{Name: "d", Image: "busybox"}, {Name: "e", Image: "busybox:1.36"}}
	kinds.DefaultPod(p)
	a, b := p.Spec.EphemeralContainers[0], p.Spec.EphemeralContainers[1]
	if a.ImagePullPolicy != "Always" || b.ImagePullPolicy != "IfNotPresent" || a.TerminationMessagePath != "/dev/termination-log" || a.TerminationMessagePolicy != "File" {
		t.Errorf("defaults: %v %v", a, b)
	}
}

func TestPodCreateRefusesEphemeralContainers(t *testing.T) {
	p := pod()
	if errs := validation.PodCreate(p); len(errs) != 0 {
		t.Fatalf("a pod without ephemeral containers: %v", errs)
	}
	p.Spec.EphemeralContainers = []*v1.EphemeralContainer{debugger()}
	got := validation.PodCreate(p).Err("Pod", "web")
	if got == nil || !strings.Contains(got.Error(), "spec.ephemeralContainers: Forbidden: cannot be set on create") {
		t.Fatalf("create with ephemeral containers: %v", got)
	}
}

func TestPodEphemeralContainersUpdate(t *testing.T) {
	second := debugger()
	second.Name = "second"
	changed := debugger()
	changed.Image = "busybox:1.37"
	for _, c := range []struct {
		name     string
		old, new []*v1.EphemeralContainer
		want     string // empty: allowed
	}{
		{"add the first", nil, []*v1.EphemeralContainer{debugger()}, ""},
		{"add another", []*v1.EphemeralContainer{debugger()}, []*v1.EphemeralContainer{debugger(), second}, ""},
		{"add before, order is free", []*v1.EphemeralContainer{debugger()}, []*v1.EphemeralContainer{second, debugger()}, ""},
		{"unchanged", []*v1.EphemeralContainer{debugger()}, []*v1.EphemeralContainer{debugger()}, ""},
		{"remove", []*v1.EphemeralContainer{debugger(), second}, []*v1.EphemeralContainer{second},
			`spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed`},
		{"change", []*v1.EphemeralContainer{debugger()}, []*v1.EphemeralContainer{changed},
			`spec.ephemeralContainers[debugger]: Forbidden: existing ephemeral containers "debugger" may not be changed`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, n := pod(), pod()
			o.Spec.EphemeralContainers, n.Spec.EphemeralContainers = c.old, c.new
			err := validation.PodEphemeralContainersUpdate(o, n).Err("Pod", "web")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want allowed, got %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
}

// TestPodUpdateKeepsEphemeralContainers: an update of the pod itself may
// not touch spec.ephemeralContainers (only the subresource may).
func TestPodUpdateKeepsEphemeralContainers(t *testing.T) {
	o := pod()
	o.Spec.EphemeralContainers = []*v1.EphemeralContainer{debugger()}
	n := proto.Clone(o).(*v1.Pod)
	if errs := validation.PodUpdate(o, n); len(errs) != 0 {
		t.Fatalf("unchanged: %v", errs)
	}
	n.Spec.EphemeralContainers = nil
	got := validation.PodUpdate(o, n).Err("Pod", "web")
	if got == nil || !strings.Contains(got.Error(), "spec.ephemeralContainers: Forbidden: may be changed only through the pods/ephemeralcontainers subresource") {
		t.Fatalf("update that drops them: %v", got)
	}
}
