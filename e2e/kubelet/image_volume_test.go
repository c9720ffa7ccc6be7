package kubelet_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// TestImageVolume: a pod mounts an image built here (one data file, no
// binary) and dropped into node1's import folder, as an image volume
// (pullPolicy Never; its root and a subPath). On a node whose runtime
// mounts images (CRI on containerd 2.1+) the container reads the file
// and cannot write there; on containerd 1.x (Debian's 1.6, what the
// suite runs on) and on the native backend it waits with
// CreateContainerConfigError saying why.
func TestImageVolume(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	const ns, ref = "imagevolume", "tugboat.local/imagevolume-data:v1"
	img := &images.Image{Ref: ref, Files: []images.File{{Path: "data/greeting", Mode: 0o644, Data: []byte("hello from an image volume\n")}}}
	var b bytes.Buffer
	if err := img.WriteArchive(&b); err != nil {
		t.Fatal(err)
	}
	n1 := c.Node("node1")
	tmp := filepath.Join(n1.ImportDir, ".imagevolume.tar.part")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(n1.ImportDir, "imagevolume.tar")); err != nil {
		t.Fatal(err)
	}

	pod := busyboxPod(ns, "reader", "node1", "exec sleep 3600")
	pod.Spec.Volumes = []*v1.Volume{{Name: "data", Image: &v1.ImageVolumeSource{Reference: ref, PullPolicy: "Never"}}}
	pod.Spec.Containers[0].VolumeMounts = []*v1.VolumeMount{
		{Name: "data", MountPath: "/data"},
		{Name: "data", MountPath: "/sub", SubPath: "data"},
	}
	createPod(t, c.Client, pod)

	node, err := client.For[*v1.Node](c.Client).Get(ctxFor(t, 30*time.Second), "", "node1")
	if err != nil {
		t.Fatal(err)
	}
	rv := node.GetStatus().GetNodeInfo().GetContainerRuntimeVersion()
	var refusal string
	switch version := strings.TrimPrefix(rv, "containerd://"); {
	case c.Runtime == cluster.RuntimeContainerd:
		refusal = "image volumes are not supported by the native containerd backend (--runtime containerd): run the kubelet with --runtime cri on containerd 2.1 or later"
	case strings.HasPrefix(version, "1.") || strings.HasPrefix(version, "2.0."):
		refusal = "image volumes need containerd 2.1 or later (CRI Mount.image); this node runs " + rv
	}
	if refusal != "" {
		p := waitPod(t, c.Client, ns, "reader", 90*time.Second, "CreateContainerConfigError", func(p *v1.Pod) bool {
			return containerStatus(p, "main").GetState().GetWaiting().GetReason() == "CreateContainerConfigError"
		})
		if msg := containerStatus(p, "main").GetState().GetWaiting().GetMessage(); msg != `volume "data": `+refusal {
			t.Errorf("waiting message %q, want %q", msg, `volume "data": `+refusal)
		}
		waitEvent(t, c.Client, ns, "reader", "Failed: Error: volume \"data\": "+refusal, 10*time.Second)
		return
	}
	waitPod(t, c.Client, ns, "reader", 90*time.Second, "Running", running)
	for file, want := range map[string]string{"/data/data/greeting": "hello from an image volume\n", "/sub/greeting": "hello from an image volume\n"} {
		if out, code := execIn(t, c.Client, ns, "reader", "cat", file); code != 0 || out != want {
			t.Errorf("%s on %s: %q (exit %d), want %q", file, rv, out, code, want)
		}
	}
	if out, code := execIn(t, c.Client, ns, "reader", "touch", "/data/new"); code == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("touch in the image volume: %q (exit %d), want a read-only file system", out, code)
	}
}
