package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestEnsureImagePlainHTTP pulls the busybox image from a read-only
// registry on loopback, over plain HTTP as a lab registry would serve it.
func TestEnsureImagePlainHTTP(t *testing.T) {
	newEnv(t)
	ctx := context.Background()
	reg := httptest.NewServer(registryHandler(t, busyboxArchive))
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
	st, err := rt.EnsureImage(ctx, ref)
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
	if _, err := rt.EnsureImage(ctx, closed+"/lab/busybox:v1"); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull from a closed port: %v, want ErrImagePull", err)
	}
	if _, err := rt.EnsureImage(ctx, host+"/lab/nothing:v1"); !errors.Is(err, runtime.ErrImagePull) {
		t.Errorf("pull of an unknown repository: %v, want ErrImagePull", err)
	}
}

// registryHandler serves the one image of an OCI archive, under any
// repository name "lab/busybox" and any tag, with the distribution API's
// read-only subset containerd's resolver uses.
func registryHandler(t *testing.T, archive []byte) http.Handler {
	blobs := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(archive))
	var index ocispec.Index
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		switch {
		case h.Name == "index.json":
			if err := json.Unmarshal(b, &index); err != nil {
				t.Fatal(err)
			}
		case strings.HasPrefix(h.Name, "blobs/sha256/"):
			blobs["sha256:"+strings.TrimPrefix(h.Name, "blobs/sha256/")] = b
		}
	}
	manifest := index.Manifests[0]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/v2/lab/busybox/")
		if !ok {
			http.Error(w, `{"errors":[{"code":"NAME_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		kind, ref, _ := strings.Cut(rest, "/")
		dgst := ref
		if kind == "manifests" && !strings.HasPrefix(ref, "sha256:") {
			dgst = manifest.Digest.String()
		}
		b, ok := blobs[dgst]
		if !ok {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return
		}
		if kind == "manifests" {
			w.Header().Set("Content-Type", manifest.MediaType)
		} else {
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		w.Header().Set("Docker-Content-Digest", dgst)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	})
}
