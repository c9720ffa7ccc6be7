package containerd

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/registrytest"
)

// TestEnsureImagePlainHTTP pulls the busybox image from a read-only
// registry on loopback, over plain HTTP as a lab registry would serve it.
func TestEnsureImagePlainHTTP(t *testing.T) {
	newEnv(t)
	ctx := context.Background()
	reg := httptest.NewServer(registrytest.Handler(t, busyboxArchive, nil))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")

	rt, err := New(Config{Address: testContainerd.Address, PlainHTTPRegistries: []string{host}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ref := host + "/lab/busybox:v1"
	if _, err := rt.ImageStatus(ctx, ref); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Fatalf("before pull: %v, want ErrImageNotPresent", err)
	}
	st, err := rt.EnsureImage(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := testRuntime.ImageStatus(ctx, "tugboat.local/busybox:latest")
	if st.Ref != ref || st.ID != want.ID {
		t.Errorf("pulled %+v, want ref %s and the busybox config %s", st, ref, want.ID)
	}
	if err := rt.RemoveImage(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.ImageStatus(ctx, ref); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("after remove: %v", err)
	}

	// Nothing listens on a closed port: ErrImagePull.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	if _, err := rt.EnsureImage(ctx, closed+"/lab/busybox:v1", nil); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull from a closed port: %v, want ErrImagePull", err)
	}
	if _, err := rt.EnsureImage(ctx, host+"/lab/nothing:v1", nil); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull of an unknown repository: %v, want ErrImagePull", err)
	}
}

// TestEnsureImageBasicAuth: the native backend answers a registry's basic
// auth challenge with the pull's credentials; without them, or with wrong
// ones, the pull fails with ErrImagePull and the registry's 401.
func TestEnsureImageBasicAuth(t *testing.T) {
	newEnv(t)
	ctx := context.Background()
	reg := httptest.NewServer(registrytest.Handler(t, busyboxArchive, &registrytest.Auth{Username: "lab", Password: "s3cret"}))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	rt, err := New(Config{Address: testContainerd.Address, PlainHTTPRegistries: []string{host}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ref := host + "/lab/busybox:v1"
	for _, auth := range []*runtime.RegistryAuth{nil, {Username: "lab", Password: "wrong"}} {
		if _, err := rt.EnsureImage(ctx, ref, auth); !errors.Is(err, runtime.ErrImagePull) || !strings.Contains(err.Error(), "401 Unauthorized") {
			t.Errorf("pull with %v: %v, want ErrImagePull with 401 Unauthorized", auth, err)
		}
	}
	st, err := rt.EnsureImage(ctx, ref, &runtime.RegistryAuth{Username: "lab", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Ref != ref || st.Digest == "" {
		t.Errorf("pulled %+v", st)
	}
	if err := rt.RemoveImage(ctx, ref); err != nil {
		t.Fatal(err)
	}
}
