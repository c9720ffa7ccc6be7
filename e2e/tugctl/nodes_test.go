package tugctl_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/cluster"
)

func TestTugctlOnNodes(t *testing.T) {
	c := cluster.NewForTest(t, cluster.Options{Binaries: bins, Images: []string{"busybox"}})
	e := &env{c: c, home: t.TempDir()}
	if err := c.WaitNodesReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	// box writes three lines, then serves /var/www over
	// HTTP on 8080.
	e.ok(t, "run", "box", "--image="+images.BusyboxRef, "--image-pull-policy=IfNotPresent", "--port=8080", "--command", "--",
		"sh", "-c", `echo one; echo two; echo three; echo hello-from-box > /var/www/index.html; exec httpd -f -p 8080 -h /var/www`)
	e.ok(t, "wait", "--for=condition=Ready", "pod/box", "--timeout=90s")
	t.Run("logs", func(t *testing.T) { testLogs(t, e) })
	t.Run("cp", func(t *testing.T) { testCp(t, e) })
	t.Run("port-forward", func(t *testing.T) { testPortForward(t, e) })
	t.Run("attach", func(t *testing.T) { testAttach(t, e) })
}

// testCp copies a tree into the pod and back, and single files both
// ways, comparing the bytes.
func testCp(t *testing.T, e *env) {
	dir := t.TempDir()
	src := filepath.Join(dir, "site")
	files := map[string]string{
		"index.html":   "<h1>copied</h1>\n",
		"sub/data.bin": string(bytes.Repeat([]byte{0, 1, 2, 255}, 50000)),
		"sub/deep/x":   "x\n",
	}
	for name, data := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	// Into an existing directory: the tree lands under its name.
	e.ok(t, "cp", src, "box:/tmp")
	if out := e.ok(t, "exec", "box", "--", "wc", "-c", "/tmp/site/sub/data.bin"); !strings.Contains(out, "200000") {
		t.Fatalf("the copied file in the pod: %q", out)
	}
	if out := e.ok(t, "exec", "box", "--", "stat", "-c", "%a", "/tmp/site/index.html"); strings.TrimSpace(out) != "640" {
		t.Errorf("mode in the pod: %q, want 640", out)
	}
	// Back, into a new directory: its content is the tree's.
	back := filepath.Join(dir, "back")
	e.ok(t, "cp", "default/box:/tmp/site", back)
	for name, data := range files {
		got, err := os.ReadFile(filepath.Join(back, name))
		if err != nil || string(got) != data {
			t.Errorf("%s back: %d bytes, %v", name, len(got), err)
		}
	}
	// A single file to a new name and back.
	e.ok(t, "cp", filepath.Join(src, "index.html"), "box:/tmp/renamed.html")
	e.ok(t, "cp", "box:/tmp/renamed.html", filepath.Join(dir, "renamed.html"))
	if got, _ := os.ReadFile(filepath.Join(dir, "renamed.html")); string(got) != files["index.html"] {
		t.Errorf("renamed file back: %q", got)
	}
	// Mistakes name what is wrong, and write nothing.
	r := e.run(t, "", "cp", "box:/nope", filepath.Join(dir, "nope"))
	if r.code == 0 || !strings.Contains(r.err, "tar cf - /nope in pod box: command terminated with exit code 1") {
		t.Errorf("cp of a missing file: %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Errorf("a failed cp wrote %s", filepath.Join(dir, "nope"))
	}
	if r := e.run(t, "", "cp", filepath.Join(dir, "missing"), "box:/tmp/x"); r.code == 0 || !strings.Contains(r.err, "doesn't exist in local filesystem") {
		t.Errorf("cp of a missing local file: %v", r)
	}
}

var forwardingRE = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)

// testPortForward fetches the pod's page through the apiserver and the
// kubelet's tunnel, several connections in a row.
func testPortForward(t *testing.T, e *env) {
	out, stop := e.background(t, "port-forward", "pod/box", ":8080")
	defer stop()
	var port string
	eventually(t, "the forwarding line", func() error {
		m := forwardingRE.FindStringSubmatch(out.String())
		if m == nil {
			return fmt.Errorf("output so far: %q", out.String())
		}
		port = m[1]
		return nil
	})
	for i := 0; i < 3; i++ {
		resp, err := http.Get("http://127.0.0.1:" + port + "/index.html")
		if err != nil {
			t.Fatalf("GET through port-forward: %v\n%s", err, out.String())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "hello-from-box\n" {
			t.Fatalf("GET %d: %d %q", i, resp.StatusCode, body)
		}
	}
}

// testLogs reads box's log from its kubelet with the options that work
// on every runtime backend.
func testLogs(t *testing.T, e *env) {
	eventually(t, "box's three lines", func() error {
		if out := e.ok(t, "logs", "box"); out != "one\ntwo\nthree\n" {
			return fmt.Errorf("log %q", out)
		}
		return nil
	})
	if out := e.ok(t, "logs", "box", "--tail=2"); out != "two\nthree\n" {
		t.Errorf("--tail=2: %q", out)
	}
	if out := e.ok(t, "logs", "box", "--limit-bytes=6"); out != "one\ntw" {
		t.Errorf("--limit-bytes=6: %q", out)
	}
	if out := e.ok(t, "logs", "-l", "run=box", "--prefix", "--all-containers"); out != "[pod/box/box] one\n[pod/box/box] two\n[pod/box/box] three\n" {
		t.Errorf("-l --prefix --all-containers: %q", out)
	}
}

// testAttach: run -i --rm and attach -i against the node's runtime. A
// backend that cannot attach (the native one) must refuse with a clear
// error naming the CRI backend; on one that can, the bytes sent come back
// through the container's process and its exit status is tugctl's.
func testAttach(t *testing.T, e *env) {
	// box runs httpd, which writes nothing: an attach just waits.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var errOut bytes.Buffer
	cmd := e.cmd(ctx, nil, "attach", "box")
	cmd.Stderr = &errOut
	_ = cmd.Run()
	if strings.Contains(errOut.String(), "cannot attach to a running process (the CRI backend can)") {
		t.Logf("the node's runtime backend cannot attach, and says so: %s", errOut.String())
		return
	}
	if ctx.Err() == nil {
		t.Fatalf("attach to a running box ended before it was stopped: %s", errOut.String())
	}

	// run -i --rm: stdin in, the process's output out, its exit status
	// is tugctl's, the pod is gone.
	r := e.run(t, "hello stdin\n", "run", "-i", "--rm", "upper", "--image="+images.BusyboxRef, "--image-pull-policy=IfNotPresent",
		"--restart=Never", "--command", "--", "sh", "-c", "tr a-z A-Z; exit 5")
	if r.code != 5 || r.out != "HELLO STDIN\npod \"upper\" deleted\n" || !strings.Contains(r.err, "pod default/upper terminated") {
		t.Errorf("run -i --rm: %v", r)
	}
	if r := e.run(t, "", "get", "pod", "upper"); r.code == 0 {
		t.Errorf("after --rm the pod is still there: %v", r)
	}

	// attach -i to a container made with stdin (run -i --attach=false).
	e.ok(t, "run", "-i", "--attach=false", "talk", "--image="+images.BusyboxRef, "--image-pull-policy=IfNotPresent",
		"--restart=Never", "--command", "--", "sh", "-c", "read l; echo got $l")
	e.ok(t, "wait", "--for=condition=Ready", "pod/talk", "--timeout=90s")
	if r := e.run(t, "there\n", "attach", "-i", "talk"); r.code != 0 || r.out != "got there\n" {
		t.Errorf("attach -i: %v", r)
	}
}
