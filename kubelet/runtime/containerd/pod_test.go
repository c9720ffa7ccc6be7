package containerd

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/internal/syncbuf"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// TestPodLifecycle runs a busybox httpd pod with CNI networking, fetches a
// file from it at its pod IP, execs into it, reads its log and stats, and
// tears it down to nothing.
func TestPodLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.runPod("web")

	www := filepath.Join(e.dir, "www")
	if err := os.MkdirAll(www, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(www, "index.html"), []byte("hello from tugboat\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.container(p, runtime.ContainerConfig{
		Name:       "httpd",
		Command:    []string{"sh", "-c"},
		Args:       []string{"echo started as $(hostname) in $PWD with GREETING=$GREETING; exec httpd -f -v -p 80 -h /www"},
		Env:        []runtime.EnvVar{{Name: "GREETING", Value: "ahoy"}},
		WorkingDir: "/tmp",
		Mounts:     []runtime.Mount{{HostPath: www, ContainerPath: "/www", ReadOnly: true}},
		Resources:  runtime.Resources{CPULimitMilli: 500, CPURequestMilli: 100, MemoryLimitBytes: 64 << 20},
		Labels:     map[string]string{"tier": "frontend"},
	})
	st := e.waitState(id, runtime.ContainerRunning, 10*time.Second)
	if st.PID == 0 || st.StartedAt.IsZero() || st.Pod.UID != p.UID || st.Name != "httpd" || st.SandboxID != p.ID {
		t.Errorf("running status %+v", st)
	}
	if st.Image != "tugboat.local/busybox:latest" || !strings.HasPrefix(st.ImageID, "sha256:") {
		t.Errorf("image %q id %q", st.Image, st.ImageID)
	}

	// The host fetches the page at the pod IP (only this pod's address).
	url := "http://" + p.IP.String() + "/index.html"
	var body string
	client := &http.Client{Timeout: 2 * time.Second}
	wait.Eventually(t, 10*time.Second, "GET "+url, func() error {
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		if err == nil && resp.StatusCode != 200 {
			err = fmt.Errorf("%s: %q", resp.Status, body)
		}
		return err
	})
	if body != "hello from tugboat\n" {
		t.Fatalf("GET %s = %q", url, body)
	}

	// Log: the container's stdout, and httpd's request log on stderr.
	waitLog(t, st.LogPath, "started as web in /tmp with GREETING=ahoy", 5*time.Second)

	// Exec: output, exit code, stdin, and the pod's /etc files.
	var out syncbuf.Buffer // stdout and stderr are copied concurrently
	code, err := e.rt.Exec(ctx, id, runtime.ExecRequest{
		Cmd:    []string{"sh", "-c", "cat /etc/hostname /etc/resolv.conf; grep web /etc/hosts; echo oops >&2; exit 3"},
		Stdout: &out, Stderr: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exec exit code %d, want 3", code)
	}
	for _, want := range []string{"web\n", "nameserver 10.96.0.10", "search default.svc.cluster.local", p.IP.String() + "\tweb", "oops"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("exec output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	code, err = e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"cat"}, Stdin: strings.NewReader("piped in"), Stdout: &out})
	if err != nil || code != 0 || out.String() != "piped in" {
		t.Errorf("exec cat with stdin: code %d err %v output %q", code, err, out.String())
	}
	if _, err := e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"/no/such/binary"}}); err == nil {
		t.Error("exec of a missing binary did not fail")
	}

	// Stats from the cgroup.
	stats, err := e.rt.ContainerStats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if stats.CPUUsageNanos == 0 || stats.MemoryUsageBytes == 0 {
		t.Errorf("stats %+v", stats)
	}

	// Listing by sandbox, label and state.
	for _, f := range []runtime.ContainerFilter{
		{SandboxID: p.ID}, {PodUID: p.UID}, {Labels: map[string]string{"tier": "frontend"}}, {State: runtime.ContainerRunning, ID: id},
	} {
		cs, err := e.rt.ListContainers(ctx, f)
		if err != nil || len(cs) != 1 || cs[0].ID != id {
			t.Errorf("ListContainers(%+v) = %v, %v", f, cs, err)
		}
	}
	if cs, _ := e.rt.ListContainers(ctx, runtime.ContainerFilter{Labels: map[string]string{"tier": "backend"}}); len(cs) != 0 {
		t.Errorf("label filter matched %v", cs)
	}
	sbs, err := e.rt.ListPodSandbox(ctx, runtime.SandboxFilter{PodUID: p.UID, State: runtime.SandboxReady})
	if err != nil || len(sbs) != 1 || sbs[0].Config.Pod.Name != "web" || sbs[0].Config.Labels["app"] != "web" {
		t.Errorf("ListPodSandbox = %+v, %v", sbs, err)
	}

	// Stop: httpd runs as PID 1 without a SIGTERM handler, so the kernel
	// ignores SIGTERM and the grace period ends in SIGKILL.
	start := time.Now()
	if err := e.rt.StopContainer(ctx, id, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 500*time.Millisecond {
		t.Errorf("stopped after %s, before the grace period ended", took)
	}
	st = e.waitState(id, runtime.ContainerExited, time.Second)
	if st.FinishedAt.IsZero() || st.ExitCode != 137 || st.Reason != runtime.ReasonError {
		t.Errorf("exited status %+v, want exit code 137 (SIGKILL), reason Error", st)
	}
	if _, err := e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("exec in an exited container: %v, want ErrNotRunning", err)
	}
	if err := e.rt.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt.ContainerStatus(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("status after remove: %v, want ErrNotFound", err)
	}
	e.teardown(p)
	e.assertClean(p)
}

// assertClean checks that nothing of pod p is left: sandbox, containers,
// tasks, snapshots, netns, veth, IP reservation, iptables rules.
func (e *env) assertClean(p *pod) {
	e.t.Helper()
	ctx := namespaces.WithNamespace(context.Background(), e.rt.cfg.Namespace)
	if cs, err := e.rt.client.Containers(ctx); err != nil || len(cs) != 0 {
		e.t.Errorf("containerd containers left: %d %v", len(cs), err)
	}
	var snaps []string
	if err := e.rt.snapshotter().Walk(ctx, func(_ context.Context, info snapshots.Info) error {
		if info.Kind != snapshots.KindCommitted {
			snaps = append(snaps, info.Name)
		}
		return nil
	}); err != nil {
		e.t.Error(err)
	}
	if len(snaps) > 0 {
		e.t.Errorf("active snapshots left: %v", snaps)
	}
	if _, err := os.Stat(p.NetNS); !os.IsNotExist(err) {
		e.t.Errorf("netns %s left: %v", p.NetNS, err)
	}
	if err := wait.Until(context.Background(), 5*time.Second, func(context.Context) error {
		if left := e.net.Leftovers(); len(left) > 0 {
			return fmt.Errorf("network left: %v", left)
		}
		return nil
	}); err != nil {
		e.t.Error(err)
	}
}

func TestImages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	st, err := e.rt.ImageStatus(ctx, images.BusyboxRef)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ref != images.BusyboxRef || !strings.HasPrefix(st.ID, "sha256:") || st.Size == 0 {
		t.Errorf("busybox status %+v", st)
	}
	all, err := e.rt.ListImages(ctx)
	if err != nil || len(all) == 0 {
		t.Fatalf("ListImages = %v, %v", all, err)
	}
	if _, err := e.rt.ImageStatus(ctx, "tugboat.local/nothing:here"); !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("missing image: %v, want ErrImageNotPresent", err)
	}
	if _, err := e.rt.ImageStatus(ctx, "Bad Ref"); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("bad ref: %v, want ErrInvalid", err)
	}
	if _, err := e.rt.ImportImage(ctx, strings.NewReader("not a tar")); err == nil {
		t.Error("importing garbage succeeded")
	}
	// A docker-archive (`docker save`): the same tar without the OCI index.
	imported, err := e.rt.ImportImage(ctx, bytes.NewReader(dockerArchiveOnly(t, busyboxArchive, "tugboat.local/busybox:docker")))
	if err != nil || len(imported) != 1 || imported[0].Ref != "tugboat.local/busybox:docker" || imported[0].ID != st.ID {
		t.Errorf("docker-archive import = %+v, %v", imported, err)
	}
	if err := e.rt.RemoveImage(ctx, "tugboat.local/busybox:docker"); err != nil {
		t.Error(err)
	}

	p := e.runPod("noimage")
	_, err = e.rt.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "c", Image: "tugboat.local/nothing:here", LogPath: filepath.Join(e.dir, "c.log")})
	if !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("create with a missing image: %v, want ErrImageNotPresent", err)
	}
	if _, err := e.rt.CreateContainer(ctx, "no-such-sandbox", runtime.ContainerConfig{Name: "c", Image: images.BusyboxRef, LogPath: "/tmp/x.log"}); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("create in a missing sandbox: %v, want ErrNotFound", err)
	}
	if err := e.rt.StopPodSandbox(ctx, p.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.rt.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "c", Image: images.BusyboxRef, LogPath: filepath.Join(e.dir, "c.log")})
	if !errors.Is(err, runtime.ErrSandboxNotReady) {
		t.Errorf("create in a stopped sandbox: %v, want ErrSandboxNotReady", err)
	}
}

// dockerArchiveOnly rewrites an archive of e2e/images as `docker save`
// would write it: no oci-layout or index.json, and the image named tag.
func dockerArchiveOnly(t *testing.T, archive []byte, tag string) []byte {
	t.Helper()
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		switch h.Name {
		case "oci-layout", "index.json":
			continue
		case "manifest.json":
			b = bytes.ReplaceAll(b, []byte(images.BusyboxRef), []byte(tag))
			h.Size = int64(len(b))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
