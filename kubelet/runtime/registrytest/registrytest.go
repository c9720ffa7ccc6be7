// Package registrytest serves an image archive as a tiny read-only
// registry for the runtimes' pull tests: the distribution API subset
// containerd's resolver uses (GET/HEAD of /v2/, manifests and blobs),
// optionally behind HTTP basic auth.
package registrytest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Repository is the one repository the handler serves ("lab/busybox"),
// under any tag.
const Repository = "lab/busybox"

// Auth, if set, is the user name and password the registry demands.
type Auth struct{ Username, Password string }

// Handler serves the first image of an OCI archive as Repository.
func Handler(t testing.TB, archive []byte, auth *Auth) http.Handler {
	t.Helper()
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
		if auth != nil {
			if u, p, ok := r.BasicAuth(); !ok || u != auth.Username || p != auth.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="registrytest"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
				return
			}
		}
		if r.URL.Path == "/v2/" {
			return
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/v2/"+Repository+"/")
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
