package pod

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestMountPropagationAndRRO: mountPropagation reaches the runtime's
// mounts; recursiveReadOnly IfPossible falls back to a plain read-only
// mount on a runtime without recursive read-only mounts and Enabled
// waits there with CreateContainerConfigError and Kubernetes' message;
// once the runtime can, both are made recursively read-only.
func TestMountPropagationAndRRO(t *testing.T) {
	e := newTestEnv(t)
	e.rt.rroErr = errors.New("the CRI runtime containerd://1.6.20 reports no runtime handler features")
	host := t.TempDir()
	mounts := func(name, rro string) *v1.Pod {
		pod := newPod(name, "app")
		pod.Spec.Volumes = []*v1.Volume{{Name: "host", HostPath: &v1.HostPathVolumeSource{Path: host}}}
		pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{
			{Name: "host", MountPath: "/plain"},
			{Name: "host", MountPath: "/none", MountPropagation: proto.String("None")},
			{Name: "host", MountPath: "/h2c", MountPropagation: proto.String("HostToContainer")},
			{Name: "host", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: proto.String(rro)},
		}
		return pod
	}
	want := func(rro bool) []runtime.Mount {
		return []runtime.Mount{
			{HostPath: host, ContainerPath: "/plain"},
			{HostPath: host, ContainerPath: "/none"},
			{HostPath: host, ContainerPath: "/h2c", Propagation: runtime.PropagationHostToContainer},
			{HostPath: host, ContainerPath: "/ro", ReadOnly: true, RecursiveReadOnly: rro},
		}
	}
	check := func(t *testing.T, w *worker, name string, want []runtime.Mount) {
		t.Helper()
		var cfg *runtime.ContainerConfig
		for _, c := range e.rt.containers {
			if c.cfg.Name == "app" && c.status.Pod.Name == name {
				cfg = &c.cfg
			}
		}
		if cfg == nil {
			t.Fatalf("%s not created: %v", name, containerState(w.status, "app"))
		}
		var got []runtime.Mount
		for _, m := range cfg.Mounts {
			if m.HostPath == host {
				got = append(got, m)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("mounts %+v, want %+v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("mount %d: %+v, want %+v", i, got[i], want[i])
			}
		}
	}

	ifPossible := e.worker(mounts("if-possible", "IfPossible"))
	e.sync(ifPossible)
	check(t, ifPossible, "if-possible", want(false))

	enabled := e.worker(mounts("enabled", "Enabled"))
	e.sync(enabled)
	wt := containerState(enabled.status, "app").GetState().GetWaiting()
	const msg = `failed to resolve recursive read-only mode: volume "host" requested recursive read-only mode, but it is not supported by the runtime`
	if wt.GetReason() != ReasonCreateContainerConfigError || wt.GetMessage() != msg {
		t.Fatalf("waiting %v, want CreateContainerConfigError: %s", wt, msg)
	}

	e.rt.mu.Lock()
	e.rt.rroErr = nil
	e.rt.mu.Unlock()
	e.advance(configRetry)
	e.sync(enabled)
	check(t, enabled, "enabled", want(true))
	again := e.worker(mounts("if-possible-2", "IfPossible"))
	e.sync(again)
	check(t, again, "if-possible-2", want(true))
}
