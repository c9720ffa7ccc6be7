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

// TestVolumeMountStatus: status.containerStatuses[].volumeMounts lists
// the container's mounts as Kubernetes 1.30+ does once the container
// exists: name, mountPath, readOnly, and for read-only mounts the
// recursive read-only mode resolved (IfPossible: Disabled on a runtime
// without recursive read-only mounts, Enabled on one with them); none
// before the container is created.
func TestVolumeMountStatus(t *testing.T) {
	e := newTestEnv(t)
	e.rt.rroErr = errors.New("no runtime handler features")
	host := t.TempDir()
	pod := func(name string) *v1.Pod {
		p := newPod(name, "app")
		p.Spec.Volumes = []*v1.Volume{{Name: "host", HostPath: &v1.HostPathVolumeSource{Path: host}}, {Name: "cache", EmptyDir: &v1.EmptyDirVolumeSource{}}}
		p.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{
			{Name: "cache", MountPath: "/cache"},
			{Name: "host", MountPath: "/ro", ReadOnly: true},
			{Name: "host", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: proto.String("IfPossible")},
		}
		return p
	}
	str := func(s string) *string { return &s }
	want := func(rro string) []*v1.VolumeMountStatus {
		return []*v1.VolumeMountStatus{
			{Name: "cache", MountPath: "/cache"},
			{Name: "host", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: str("Disabled")},
			{Name: "host", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: str(rro)},
		}
	}
	check := func(w *worker, want []*v1.VolumeMountStatus) {
		t.Helper()
		got := containerState(w.status, "app").GetVolumeMounts()
		if len(got) != len(want) {
			t.Fatalf("volumeMounts %v, want %v", got, want)
		}
		for i := range want {
			if !proto.Equal(got[i], want[i]) {
				t.Errorf("volumeMounts[%d] = %v, want %v", i, got[i], want[i])
			}
		}
	}

	plain := e.worker(pod("plain"))
	e.sync(plain)
	check(plain, want("Disabled"))

	e.rt.mu.Lock()
	e.rt.rroErr = nil
	e.rt.mu.Unlock()
	rro := e.worker(pod("rro"))
	e.sync(rro)
	check(rro, want("Enabled"))
	// The first pod's container keeps what it was made with.
	e.sync(plain)
	check(plain, want("Disabled"))

	// A container not created yet (the registry refuses its image) has
	// none.
	e.rt.wantAuth = &runtime.RegistryAuth{Username: "lab", Password: "s3cret"}
	missing := pod("missing")
	missing.Spec.Containers[0].Image = "reg.example/none:v1"
	w := e.worker(missing)
	e.sync(w)
	if cs := containerState(w.status, "app"); cs.GetState().GetWaiting() == nil || len(cs.GetVolumeMounts()) != 0 {
		t.Errorf("a container not created: %v", cs)
	}
}
