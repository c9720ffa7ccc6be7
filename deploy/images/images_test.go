package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/tugboat/tugboat/api/wait"
)

func TestBusyboxArchive(t *testing.T) {
	if _, err := os.Stat(DefaultBusyboxPath); err != nil {
		skipOrFail(t, "busybox-static is not installed (hack/install-deps.sh)")
	}
	var a, b bytes.Buffer
	if err := Build(context.Background(), "busybox", &a, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Build(context.Background(), "busybox", &b, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two builds differ: the archive is not reproducible")
	}
	entries := readTar(t, a.Bytes())
	var index ocispec.Index
	if err := json.Unmarshal(entries["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations[containerdImageName] != BusyboxRef {
		t.Fatalf("index does not name %s: %+v", BusyboxRef, index.Manifests)
	}
	var manifest ocispec.Manifest
	if err := json.Unmarshal(entries[blobPath(index.Manifests[0].Digest)], &manifest); err != nil {
		t.Fatal(err)
	}
	layer := entries[blobPath(manifest.Layers[0].Digest)]
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
	}
	for _, applet := range []string{"bin/sh", "usr/sbin/httpd", "bin/sleep", "usr/bin/wget", "usr/bin/nc", "bin/cat", "bin/echo"} {
		h := files[applet]
		if h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/busybox" {
			t.Errorf("%s: %+v, want a symlink to /bin/busybox", applet, h)
		}
	}
	if h := files["bin/busybox"]; h == nil || h.Size == 0 || h.Mode&0o111 == 0 {
		t.Errorf("bin/busybox: %+v", h)
	}
	if h := files["tmp/"]; h == nil || h.Mode&0o1000 == 0 {
		t.Errorf("tmp: %+v, want a sticky dir", h)
	}
	if _, ok := entries["manifest.json"]; !ok {
		t.Error("no docker-archive manifest.json")
	}
}

// TestEchoServer builds the echo server and talks to it on loopback.
func TestEchoServer(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go tool")
	}
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "echo")
	if err := BuildEcho(ctx, bin, ""); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	cmd := exec.Command(bin)
	cmd.Env = []string{fmt.Sprintf("PORT=%d", port), "POD_NAME=web-0", "POD_IP=10.244.9.9"}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	go io.Copy(io.Discard, bufio.NewReader(stdout))

	url := fmt.Sprintf("http://127.0.0.1:%d/hello", port)
	var body string
	wait.Eventually(t, 10*time.Second, "the echo server", func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return nil
	})
	if want := "pod=web-0 ip=10.244.9.9 path=/hello\n"; body != want {
		t.Fatalf("body %q, want %q", body, want)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/client", port))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "client=127.0.0.1\n" {
		t.Errorf("/client answered %q, want client=127.0.0.1", b)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("echo server did not exit cleanly on SIGTERM: %v", err)
	}

	img, err := Echo(bin)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := img.WriteArchive(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readTar(t, buf.Bytes())["manifest.json"]), EchoRef) {
		t.Error("echo archive's manifest.json does not name " + EchoRef)
	}
}

func readTar(t *testing.T, b []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = data
	}
}

func skipOrFail(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
