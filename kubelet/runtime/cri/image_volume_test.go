package cri

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

func TestImageVolumesSupported(t *testing.T) {
	for _, c := range []struct {
		name, version, err string
	}{
		{"containerd", "2.4.2", ""},
		{"containerd", "2.1.0", ""},
		{"containerd", "2.0.5", "image volumes need containerd 2.1 or later (CRI Mount.image); this node runs containerd://2.0.5"},
		{"containerd", "1.6.20~ds1", "image volumes need containerd 2.1 or later (CRI Mount.image); this node runs containerd://1.6.20~ds1"},
		{"cri-o", "1.31.0", ""},
		{"cri-o", "1.30.4", "image volumes need cri-o 1.31 or later"},
		{"other", "9.9", "the CRI runtime other://9.9 does not mount images"},
	} {
		err := imageVolumesSupported(runtime.VersionInfo{RuntimeName: c.name, RuntimeVersion: c.version})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %s: %v", c.name, c.version, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %s: error %v, want %q", c.name, c.version, err, c.err)
		}
	}
}

// TestImageMount: on a containerd whose CRI mounts images (2.1+, make
// test-containerd2), a container sees the busybox image's files at the
// mount (and a subPath of it), read-only; on an older one ImageVolumes
// says so and names the version.
func TestImageMount(t *testing.T) {
	require(t)
	ctx := context.Background()
	v, err := testRuntime.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := testRuntime.ImageVolumes(ctx); err != nil {
		if v.RuntimeName != "containerd" || !strings.HasPrefix(v.RuntimeVersion, "1.") && !strings.HasPrefix(v.RuntimeVersion, "2.0") {
			t.Fatalf("ImageVolumes on %s: %v", v, err)
		}
		if !strings.Contains(err.Error(), "containerd 2.1 or later") || !strings.Contains(err.Error(), v.RuntimeVersion) {
			t.Errorf("ImageVolumes on %s: %v, want the version it needs and the node's", v, err)
		}
		return
	}
	st, err := testRuntime.ImageStatus(ctx, images.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	p := runPod(t, sandboxConfig(t, "imgvol"))
	id := p.container(t, "main", "test -f /img/bin/busybox && echo root-ok; test -f /sub/busybox && echo sub-ok; touch /img/x 2>/dev/null || echo read-only",
		func(c *runtime.ContainerConfig) {
			c.Mounts = []runtime.Mount{
				{Image: st.ID, ContainerPath: "/img", ReadOnly: true},
				{Image: st.ID, ImageSubPath: "bin", ContainerPath: "/sub", ReadOnly: true},
			}
		})
	cs := waitState(t, id, runtime.ContainerExited)
	b, err := os.ReadFile(cs.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"root-ok", "sub-ok", "read-only"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("log %q lacks %q (on %s)", b, want, v)
		}
	}
}
