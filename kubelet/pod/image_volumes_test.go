package pod

import (
	"errors"
	"strings"
	"testing"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestImageVolumes: a container mounting an image volume waits with
// CreateContainerConfigError while the runtime cannot mount images, with
// the puller's reasons while the image is missing (policy Never), and
// then gets a read-only image mount of the image's ID (subPath kept),
// whatever its volumeMount's readOnly says.
func TestImageVolumes(t *testing.T) {
	e := newTestEnv(t)
	e.rt.imageVolumesErr = errors.New("image volumes need containerd 2.1 or later (CRI Mount.image); this node runs containerd://1.6.20")
	const data = "tugboat.local/data:v1"
	pod := newPod("imgvol", "app")
	pod.Spec.Volumes = []*v1.Volume{{Name: "data", Image: &v1.ImageVolumeSource{Reference: data, PullPolicy: "Never"}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/etc/app", SubPath: "conf/", ReadOnly: true},
	}
	w := e.worker(pod)
	e.sync(w)
	wt := containerState(w.status, "app").GetState().GetWaiting()
	if wt.GetReason() != ReasonCreateContainerConfigError || wt.GetMessage() != `volume "data": `+e.rt.imageVolumesErr.Error() {
		t.Fatalf("waiting %v, want CreateContainerConfigError with the runtime's reason", wt)
	}

	e.rt.mu.Lock()
	e.rt.imageVolumesErr = nil
	e.rt.mu.Unlock()
	e.advance(configRetry)
	e.sync(w)
	if wt := containerState(w.status, "app").GetState().GetWaiting(); wt.GetReason() != ReasonErrImageNeverPull || !strings.Contains(wt.GetMessage(), data) {
		t.Fatalf("waiting %v, want ErrImageNeverPull for the volume's image", wt)
	}

	e.rt.mu.Lock()
	e.rt.images[data] = true
	e.rt.mu.Unlock()
	e.advance(configRetry)
	e.sync(w)
	run := e.rt.running()
	if len(run) != 1 {
		t.Fatalf("not running: %v", containerState(w.status, "app"))
	}
	var got []runtime.Mount
	for _, m := range e.rt.containers[run[0].ID].cfg.Mounts {
		if m.Image != "" {
			got = append(got, m)
		}
	}
	want := []runtime.Mount{
		{Image: "sha256:id-of-" + data, ContainerPath: "/data", ReadOnly: true},
		{Image: "sha256:id-of-" + data, ImageSubPath: "conf", ContainerPath: "/etc/app", ReadOnly: true},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("image mounts %+v, want %+v", got, want)
	}
}
