package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/tugboat/tugboat/deploy/images"
)

func TestArchiveImages(t *testing.T) {
	for _, tc := range []struct {
		name, want, wantErr string
	}{
		{"tugboat.local/echo:latest", "echo:latest", ""},
		{"registry:5000/team/app:v2", "team/app:v2", ""},
		{"busybox", "library/busybox:latest", ""},
		{"", "", "no image name"},
		{"bad name:with spaces", "", "image name"},
	} {
		ann := map[string]string{}
		if tc.name != "" {
			ann["io.containerd.image.name"] = tc.name
		}
		idx, _ := json.Marshal(ocispec.Index{Manifests: []ocispec.Descriptor{{MediaType: ocispec.MediaTypeImageManifest, Annotations: ann}}})
		a := &archive{files: map[string][]byte{"index.json": idx}}
		imgs, err := a.images()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil || len(imgs) != 1 || imgs[0].Repo+":"+imgs[0].Tag != tc.want {
			t.Errorf("%q: images = %+v, %v; want %s", tc.name, imgs, err, tc.want)
		}
	}
	if _, err := (&archive{files: map[string][]byte{}}).images(); err == nil || !strings.Contains(err.Error(), "index.json") {
		t.Errorf("no index.json: err = %v", err)
	}
}

// registryBinary finds the distribution registry hack/build-static.sh
// builds, or one on PATH.
func registryBinary(t *testing.T) string {
	if p, err := exec.LookPath("registry"); err == nil {
		return p
	}
	cache := os.Getenv("TUGBOAT_CACHE_DIR")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "tugboat")
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "static", "registry-*", "registry")); len(m) > 0 {
		return m[len(m)-1]
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no registry binary: run hack/build-static.sh")
	}
	t.Skip("no registry binary (hack/build-static.sh builds it); skipping the push test")
	return ""
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestPushToRealRegistry pushes an archive made by e2e/images into a real
// distribution registry, twice, and reads the image back.
func TestPushToRealRegistry(t *testing.T) {
	bin := registryBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	cfg := fmt.Sprintf("version: 0.1\nlog: {level: warn}\nstorage: {filesystem: {rootdirectory: %s}}\nhttp: {addr: %q}\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(bin, "serve", filepath.Join(dir, "config.yml"))
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	if err := waitHTTP(ctx, base+"/v2/"); err != nil {
		t.Fatalf("registry did not answer: %v\n%s", err, logs.String())
	}

	img := &images.Image{
		Ref:    "tugboat.local/pushtest:v1",
		Files:  []images.File{{Path: "hello.txt", Mode: 0o644, Data: []byte("hello from the push test\n")}},
		Config: images.Config{Cmd: []string{"/hello"}},
	}
	var buf bytes.Buffer
	if err := img.WriteArchive(&buf); err != nil {
		t.Fatal(err)
	}
	archiveDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(archiveDir, "pushtest.tar"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &pusher{base: base}
	log := slog.New(slog.DiscardHandler)
	for i := 0; i < 2; i++ { // idempotent
		if err := pushAll(ctx, log, p, archiveDir); err != nil {
			t.Fatalf("push %d: %v\nregistry log:\n%s", i+1, err, logs.String())
		}
	}

	a, err := readArchive(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	imgs, err := a.images()
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v2/pushtest/manifests/v1", nil)
	req.Header.Set("Accept", ocispec.MediaTypeImageManifest)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET manifest: %s: %s", resp.Status, body)
	}
	if got := resp.Header.Get("Docker-Content-Digest"); got != imgs[0].Manifest.Digest.String() {
		t.Errorf("registry's manifest digest %s, want the archive's %s", got, imgs[0].Manifest.Digest)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(base + "/v2/pushtest/blobs/" + m.Layers[0].Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	layer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m.Layers[0].Digest.Algorithm().FromBytes(layer) != m.Layers[0].Digest {
		t.Error("layer read back does not match its digest")
	}
}

func TestReadArchiveSkipsNonRegular(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: "blobs/", Typeflag: tar.TypeDir, Mode: 0o755})
	_ = tw.WriteHeader(&tar.Header{Name: "./index.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2})
	_, _ = tw.Write([]byte("{}"))
	_ = tw.Close()
	a, err := readArchive(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.files) != 1 || string(a.files["index.json"]) != "{}" {
		t.Errorf("files = %v, want index.json only", a.files)
	}
}
