package cri

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	criapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/registrytest"
)

// TestImages: import (into the CRI's namespace, seen by crictl at once),
// status, list, and remove of one tag of two.
func TestImages(t *testing.T) {
	require(t)
	ctx := context.Background()
	st, err := testRuntime.ImageStatus(ctx, images.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ref != images.BusyboxRef || !strings.HasPrefix(st.ID, "sha256:") || st.Size == 0 {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(crictl(t, "images"), "tugboat.local/busybox") {
		t.Error("crictl images does not list the imported busybox")
	}
	if _, err := testRuntime.ImageStatus(ctx, "tugboat.local/nothing:v1"); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("absent image: %v, want ErrImageNotPresent", err)
	}
	if _, err := testRuntime.ImageStatus(ctx, "Not A Ref"); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("bad ref: %v, want ErrInvalid", err)
	}
	list, err := testRuntime.ListImages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, i := range list {
		refs = append(refs, i.Ref)
	}
	if !contains(refs, images.BusyboxRef) || !contains(refs, images.PauseRef) {
		t.Errorf("list %v lacks busybox or pause", refs)
	}
	if _, err := testRuntime.ImportImage(ctx, strings.NewReader("not a tar")); err == nil {
		t.Error("importing garbage succeeded")
	}
}

// TestPullImage pulls from a loopback registry behind basic auth, through
// the CRI with credentials, then removes the pulled tag but not the
// imported one it shares its content with.
func TestPullImage(t *testing.T) {
	require(t)
	ctx := context.Background()
	reg := httptest.NewServer(registrytest.Handler(t, busyboxArchive, &registrytest.Auth{Username: "lab", Password: "s3cret"}))
	defer reg.Close()
	// containerd speaks plain HTTP to localhost registries.
	host := strings.Replace(strings.TrimPrefix(reg.URL, "http://"), "127.0.0.1", "localhost", 1)
	ref := host + "/" + registrytest.Repository + ":v1"

	if _, err := testRuntime.EnsureImage(ctx, ref, nil); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull without credentials: %v, want ErrImagePull", err)
	}
	st, err := testRuntime.EnsureImage(ctx, ref, &runtime.RegistryAuth{Username: "lab", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := testRuntime.ImageStatus(ctx, images.BusyboxRef)
	if st.Ref != ref || st.ID != want.ID || st.Digest == "" {
		t.Errorf("pulled %+v, want %s with busybox's ID %s and a digest", st, ref, want.ID)
	}
	if err := testRuntime.RemoveImage(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := testRuntime.ImageStatus(ctx, ref); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("after remove: %v", err)
	}
	if _, err := testRuntime.ImageStatus(ctx, images.BusyboxRef); err != nil {
		t.Errorf("removing the pulled tag removed the imported one: %v", err)
	}
	if err := testRuntime.RemoveImage(ctx, ref); err != nil {
		t.Errorf("second remove: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := strings.Replace(l.Addr().String(), "127.0.0.1", "localhost", 1)
	l.Close()
	if _, err := testRuntime.EnsureImage(ctx, closed+"/lab/busybox:v1", nil); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull from a closed port: %v, want ErrImagePull", err)
	}
}

// TestSandboxImageMissing: without the pause image no sandbox can be made,
// and the error says it is the sandbox image.
func TestSandboxImageMissing(t *testing.T) {
	require(t)
	ctx := context.Background()
	if err := testRuntime.RemoveImage(ctx, images.PauseRef); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if _, err := testRuntime.ImportImage(ctx, bytes.NewReader(pauseArchive)); err != nil {
			t.Fatalf("re-import pause: %v", err)
		}
	}()
	_, err := testRuntime.RunPodSandbox(ctx, sandboxConfig(t, "nopause"))
	if !errors.Is(err, runtime.ErrSandboxImage) {
		t.Fatalf("run without the pause image: %v, want ErrSandboxImage", err)
	}
	if !strings.Contains(err.Error(), images.PauseRef) {
		t.Errorf("the error does not name the sandbox image: %v", err)
	}
}

// TestNetworkFailures: the runtime's NetworkReady follows its CNI config,
// and a plugin that fails makes RunPodSandbox fail with ErrNetworkSetup
// and the plugin's message.
func TestNetworkFailures(t *testing.T) {
	require(t)
	ctx := context.Background()
	confDir := testNetwork.Config().ConfDir
	entries, err := os.ReadDir(confDir)
	if err != nil {
		t.Fatal(err)
	}
	// Renamed within the folder: containerd reloads its CNI config on a
	// write, rename or removal there (not on a file created by a rename
	// from elsewhere).
	for _, e := range entries {
		if err := os.Rename(filepath.Join(confDir, e.Name()), filepath.Join(confDir, e.Name()+".off")); err != nil {
			t.Fatal(err)
		}
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		os.Remove(filepath.Join(confDir, "00-broken.conflist"))
		for _, e := range entries {
			if err := os.Rename(filepath.Join(confDir, e.Name()+".off"), filepath.Join(confDir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "the test network's config loaded again", func() bool {
			st, err := testRuntime.rs.Status(ctx, &criapi.StatusRequest{Verbose: true})
			return err == nil && strings.Contains(st.Info["config"]+st.Info["cniconfig"], testNetwork.Name)
		})
	}
	defer restore()
	waitFor(t, "NetworkReady false without a CNI config", func() bool {
		return errors.Is(testRuntime.NetworkStatus(ctx), ErrNetworkNotReady)
	})
	_, err = testRuntime.RunPodSandbox(ctx, sandboxConfig(t, "nocni"))
	if !errors.Is(err, runtime.ErrNetworkSetup) {
		t.Errorf("run without a CNI config: %v, want ErrNetworkSetup", err)
	}

	broken := `{"cniVersion":"1.0.0","name":"broken","plugins":[{"type":"no-such-plugin"}]}`
	if err := os.WriteFile(filepath.Join(confDir, "00-broken.conflist"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "NetworkReady with the broken config loaded", func() bool { return testRuntime.NetworkStatus(ctx) == nil })
	_, err = testRuntime.RunPodSandbox(ctx, sandboxConfig(t, "badplugin"))
	if !errors.Is(err, runtime.ErrNetworkSetup) || !strings.Contains(err.Error(), "no-such-plugin") {
		t.Errorf("run with a missing plugin: %v, want ErrNetworkSetup naming the plugin", err)
	}
	// The runtime keeps the failed sandbox NotReady: its CNI DEL fails
	// too until the config is fixed, so it is the caller's to remove then.
	left, _ := testRuntime.ListPodSandbox(ctx, runtime.SandboxFilter{Labels: map[string]string{"app": "badplugin"}})
	for _, sb := range left {
		if sb.State != runtime.SandboxNotReady {
			t.Errorf("failed sandbox %s is %s, want NotReady", sb.ID, sb.State)
		}
	}
	restore()
	for _, sb := range left {
		if err := testRuntime.RemovePodSandbox(ctx, sb.ID); err != nil {
			t.Errorf("removing the failed sandbox once the config is fixed: %v", err)
		}
	}
}
