package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/internal/syncbuf"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/mounttest"
)

// TestContainerLifecycle: create, start, the CRI log format, exit codes
// and reasons, listing by pod and label, stop and remove.
func TestContainerLifecycle(t *testing.T) {
	require(t)
	ctx := context.Background()
	p := runPod(t, sandboxConfig(t, "life"))
	id := p.container(t, "main", "echo out; echo err >&2; cat /etc/hostname /etc/resolv.conf; exit 3", func(c *runtime.ContainerConfig) {
		c.Env = []runtime.EnvVar{{Name: "GREETING", Value: "hi"}}
		c.Attempt = 1
	})
	st := waitState(t, id, runtime.ContainerExited)
	if st.ExitCode != 3 || st.Reason != runtime.ReasonError || st.FinishedAt.IsZero() || st.StartedAt.IsZero() {
		t.Errorf("exited: %+v, want code 3, reason Error, start and finish times", st)
	}
	if st.Name != "main" || st.Attempt != 1 || st.SandboxID != p.ID || st.Pod != p.Ref || st.Image != images.BusyboxRef || !strings.HasPrefix(st.ImageID, "sha256:") {
		t.Errorf("identity: %+v", st)
	}
	if st.Labels["tugboat.io/node"] != "test" || len(st.Labels) != 1 {
		t.Errorf("labels %v, want only the caller's", st.Labels)
	}
	b, err := os.ReadFile(st.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^\S+ (stdout|stderr) F (.*)$`)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("log line %q is not in the CRI format", l)
		}
		got = append(got, m[1]+":"+m[2])
	}
	for _, want := range []string{"stdout:out", "stderr:err", "stdout:life", "stdout:nameserver 10.96.0.10"} {
		if !contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}

	ok := p.container(t, "ok", "true")
	if st := waitState(t, ok, runtime.ContainerExited); st.ExitCode != 0 || st.Reason != runtime.ReasonCompleted {
		t.Errorf("exit 0: %+v, want Completed", st)
	}
	missing := runtimeCreate(t, p, "missing", func(c *runtime.ContainerConfig) { c.Command = []string{"/no/such/binary"} })
	if err := testRuntime.StartContainer(ctx, missing); err == nil {
		t.Error("starting a missing binary succeeded")
	}
	if st := waitState(t, missing, runtime.ContainerExited); st.ExitCode != 128 || st.Reason != runtime.ReasonStartError || st.Message == "" {
		t.Errorf("missing binary: %+v, want exit 128, StartError with a message", st)
	}
	if err := testRuntime.StartContainer(ctx, ok); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("restarting an exited container: %v, want ErrInvalid", err)
	}

	list, err := testRuntime.ListContainers(ctx, runtime.ContainerFilter{PodUID: p.Ref.UID})
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Errorf("pod has %d containers listed, want 3: %+v", len(list), list)
	}
	for _, c := range list {
		if c.ID == id && (c.ExitCode != 3 || c.StartedAt.IsZero()) {
			t.Errorf("listed status differs from ContainerStatus: %+v", c)
		}
	}
	byName, _ := testRuntime.ListContainers(ctx, runtime.ContainerFilter{SandboxID: p.ID, Labels: map[string]string{"tugboat.io/node": "test"}, State: runtime.ContainerExited})
	if len(byName) != 3 {
		t.Errorf("by sandbox, label and state: %d, want 3", len(byName))
	}
	ps := crictl(t, "ps", "-a", "--pod", p.ID)
	if !strings.Contains(ps, "life") || !strings.Contains(ps, "default") {
		t.Errorf("crictl ps does not name the pod and namespace:\n%s", ps)
	}
	if logs := crictl(t, "logs", id); !strings.Contains(logs, "out") {
		t.Errorf("crictl logs: %q", logs)
	}

	if err := testRuntime.RemoveContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := testRuntime.RemoveContainer(ctx, id); err != nil {
		t.Errorf("second remove: %v", err)
	}
	if _, err := testRuntime.ContainerStatus(ctx, id); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("status after remove: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(st.LogPath); err != nil {
		t.Errorf("the log went with the container: %v", err)
	}
}

func runtimeCreate(t *testing.T, p *pod, name string, mod func(*runtime.ContainerConfig)) string {
	t.Helper()
	cfg := runtime.ContainerConfig{Name: name, Image: images.BusyboxRef, LogPath: filepath.Join(p.Dir, "containers", name, "0.log"), Labels: map[string]string{"tugboat.io/node": "test"}}
	mod(&cfg)
	id, err := testRuntime.CreateContainer(context.Background(), p.ID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestCreateRefusals: images that are not there, logs outside the pod's
// folder.
func TestCreateRefusals(t *testing.T) {
	require(t)
	ctx := context.Background()
	p := runPod(t, sandboxConfig(t, "refuse"))
	_, err := testRuntime.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "x", Image: "tugboat.local/nothing:v1", LogPath: filepath.Join(p.Dir, "containers", "x", "0.log")})
	if !errors.Is(err, runtime.ErrImageNotPresent) {
		t.Errorf("absent image: %v, want ErrImageNotPresent", err)
	}
	_, err = testRuntime.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "x", Image: images.BusyboxRef, LogPath: "/tmp/elsewhere.log"})
	if !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("log outside the log directory: %v, want ErrInvalid", err)
	}
	_, err = testRuntime.CreateContainer(ctx, "no-such-sandbox", runtime.ContainerConfig{Name: "x", Image: images.BusyboxRef, LogPath: "/tmp/x.log"})
	if !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("unknown sandbox: %v, want ErrNotFound", err)
	}
}

// TestStopContainer: the stop signal with its grace, SIGKILL after it, a
// cancelled stop kills at once.
func TestStopContainer(t *testing.T) {
	require(t)
	ctx := context.Background()
	p := runPod(t, sandboxConfig(t, "stop"))
	polite := p.container(t, "polite", "trap 'echo bye; exit 0' TERM; while true; do sleep 0.1; done")
	stubborn := p.container(t, "stubborn", "trap '' TERM; while true; do sleep 0.1; done")
	waitState(t, polite, runtime.ContainerRunning)
	waitState(t, stubborn, runtime.ContainerRunning)
	time.Sleep(200 * time.Millisecond) // the traps are set

	start := time.Now()
	if err := testRuntime.StopContainer(ctx, polite, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("a TERM handler that exits at once took %s", d)
	}
	if st, _ := testRuntime.ContainerStatus(ctx, polite); st.State != runtime.ContainerExited || st.ExitCode != 0 {
		t.Errorf("polite: %+v, want exited 0", st)
	}
	start = time.Now()
	if err := testRuntime.StopContainer(ctx, stubborn, time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("the grace period was not waited for: %s", d)
	}
	if st, _ := testRuntime.ContainerStatus(ctx, stubborn); st.State != runtime.ContainerExited || st.ExitCode != 137 {
		t.Errorf("stubborn: %+v, want killed (137)", st)
	}
	if err := testRuntime.StopContainer(ctx, stubborn, time.Second); err != nil {
		t.Errorf("stopping an exited container: %v", err)
	}

	again := p.container(t, "cancelled", "trap '' TERM; while true; do sleep 0.1; done")
	waitState(t, again, runtime.ContainerRunning)
	time.Sleep(200 * time.Millisecond)
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	start = time.Now()
	_ = testRuntime.StopContainer(cctx, again, time.Minute)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("a cancelled stop waited %s", d)
	}
	waitState(t, again, runtime.ContainerExited)
}

// TestOOMKilled: a container over its memory limit is OOMKilled.
func TestOOMKilled(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "oom"))
	id := p.container(t, "hog", "head -c 64m /dev/zero | tail > /dev/null", func(c *runtime.ContainerConfig) {
		c.Resources.MemoryLimitBytes = 16 << 20
	})
	waitState(t, id, runtime.ContainerExited)
	// containerd's CRI handles the exit and the OOM event apart: until the
	// OOM event is handled an exited container reads as Error (137), then
	// as OOMKilled.
	wait.Eventually(t, 10*time.Second, "the exited container OOMKilled", func() error {
		st, err := testRuntime.ContainerStatus(context.Background(), id)
		if err != nil {
			return err
		}
		if st.Reason != runtime.ReasonOOMKilled {
			return fmt.Errorf("over the limit: %+v, want OOMKilled", st)
		}
		return nil
	})
}

// TestExec: exit codes, stdin to EOF, a terminal with resizes, errors.
func TestExec(t *testing.T) {
	require(t)
	ctx := context.Background()
	p := runPod(t, sandboxConfig(t, "exec"))
	id := p.container(t, "main", "sleep 300")
	waitState(t, id, runtime.ContainerRunning)

	out, code := execOut(t, id, "sh", "-c", "echo $HOSTNAME-out; echo err >&2; exit 7")
	if code != 7 || !strings.Contains(out, "exec-out") || !strings.Contains(out, "err") {
		t.Errorf("exec: %q, exit %d; want the output and 7", out, code)
	}
	var stdout bytes.Buffer
	code, err := testRuntime.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"sh", "-c", "wc -c"}, Stdin: strings.NewReader("twelve bytes"), Stdout: &stdout})
	if err != nil || code != 0 || strings.TrimSpace(stdout.String()) != "12" {
		t.Errorf("stdin to EOF: %q, %d, %v", stdout.String(), code, err)
	}

	resize := make(chan runtime.TerminalSize, 1)
	resize <- runtime.TerminalSize{Width: 123, Height: 45}
	stdout.Reset()
	code, err = testRuntime.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"sh", "-c", "sleep 0.5; stty size"}, TTY: true, Stdout: &stdout, Resize: resize})
	if err != nil || code != 0 || !strings.Contains(stdout.String(), "45 123") {
		t.Errorf("tty: %q, %d, %v; want 45 123", stdout.String(), code, err)
	}

	if _, err := testRuntime.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"/no/such/binary"}}); err == nil {
		t.Error("exec of a missing binary: no error")
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := testRuntime.Exec(cctx, id, runtime.ExecRequest{Cmd: []string{"sleep", "123"}, Stdout: &stdout}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled exec: %v", err)
	}
	// The runtime kills a process whose stream went away.
	deadline := time.Now().Add(15 * time.Second)
	for {
		ps, _ := execOut(t, id, "ps")
		if !strings.Contains(ps, "sleep 123") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the cancelled exec's process still runs:\n%s", ps)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	done := p.container(t, "done", "true")
	waitState(t, done, runtime.ContainerExited)
	if _, err := testRuntime.Exec(ctx, done, runtime.ExecRequest{Cmd: []string{"true"}}); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("exec in an exited container: %v, want ErrNotRunning", err)
	}
}

func execOut(t testing.TB, id string, cmd ...string) (string, int) {
	t.Helper()
	var out syncbuf.Buffer // the exec writes stdout and stderr from two goroutines
	code, err := testRuntime.Exec(context.Background(), id, runtime.ExecRequest{Cmd: cmd, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return out.String(), code
}

// TestStats: a running container's cgroup usage, alone and listed, and
// the pod's.
func TestStats(t *testing.T) {
	require(t)
	ctx := context.Background()
	p := runPod(t, sandboxConfig(t, "stats"))
	id := p.container(t, "busy", "head -c 8m /dev/zero > /tmp/fill; while true; do :; done")
	waitState(t, id, runtime.ContainerRunning)
	time.Sleep(time.Second)
	st, err := testRuntime.ContainerStats(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.CPUUsageNanos == 0 || st.MemoryUsageBytes == 0 || st.MemoryWorkingSetBytes == 0 {
		t.Errorf("stats %+v: want cpu and memory use", st)
	}
	all, err := testRuntime.ListContainerStats(ctx, map[string]string{"tugboat.io/node": "test"})
	if err != nil {
		t.Fatal(err)
	}
	if all[id].CPUUsageNanos == 0 {
		t.Errorf("listed stats %+v lack %s", all, id)
	}
	pods, err := testRuntime.ListPodSandboxStats(ctx, map[string]string{"app": "stats"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || pods[0].Pod != p.Ref || pods[0].MemoryWorkingSetBytes == 0 {
		t.Errorf("pod stats %+v", pods)
	}
	done := p.container(t, "done", "true")
	waitState(t, done, runtime.ContainerExited)
	if _, err := testRuntime.ContainerStats(ctx, done); !errors.Is(err, runtime.ErrNotRunning) {
		t.Errorf("stats of an exited container: %v, want ErrNotRunning", err)
	}
}

// TestLogs: the runtime splits a line over its maximum into partial
// entries; runtime.ReadLog joins them, and prefixes times on request.
func TestLogs(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "logs"))
	id := p.container(t, "main", "echo first; head -c 40000 /dev/zero | tr '\\0' x; echo; echo last >&2")
	st := waitState(t, id, runtime.ContainerExited)
	if st.LogFormat != runtime.LogFormatCRI {
		t.Errorf("log format %q, want cri", st.LogFormat)
	}
	raw, err := os.ReadFile(st.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), " stdout P ") {
		t.Errorf("no partial entry for a 40000-byte line in:\n%.300s", raw)
	}
	var out bytes.Buffer
	if err := runtime.ReadLog(context.Background(), st.LogPath, runtime.LogOptions{Format: runtime.LogFormatCRI}, &out); err != nil {
		t.Fatal(err)
	}
	// stdout and stderr are copied apart, so "last" (stderr) may come
	// before either stdout line (seen on containerd 2): the lines, and
	// stdout's order, not the order across streams.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	var stdout []string
	for _, l := range lines {
		if l != "last" {
			stdout = append(stdout, l)
		}
	}
	if len(lines) != 3 || len(stdout) != 2 || stdout[0] != "first" || stdout[1] != strings.Repeat("x", 40000) || !contains(lines, "last") {
		t.Errorf("decoded log: %d bytes %.80q..., want first, the 40000-byte line and last", out.Len(), out.String())
	}
	out.Reset()
	if err := runtime.ReadLog(context.Background(), st.LogPath, runtime.LogOptions{Format: runtime.LogFormatCRI, Timestamps: true}, &out); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		ts, _, ok := strings.Cut(l, " ")
		if _, err := time.Parse(time.RFC3339Nano, ts); !ok || err != nil {
			t.Errorf("line %.60q has no timestamp: %v", l, err)
		}
	}
}

// TestPIDTarget: a container made with PIDTargetID (an ephemeral
// container's targetContainerName) sees the target container's processes;
// one made without sees only its own.
func TestPIDTarget(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "pidtarget"))
	target := p.container(t, "app", "exec sleep 4242")
	waitState(t, target, runtime.ContainerRunning)
	dbg := p.container(t, "debugger", "sleep 300", func(c *runtime.ContainerConfig) { c.PIDTargetID = target })
	waitState(t, dbg, runtime.ContainerRunning)
	if ps, _ := execOut(t, dbg, "ps"); !strings.Contains(ps, "sleep 4242") {
		t.Errorf("ps in the ephemeral container does not show the target's process:\n%s", ps)
	}
	alone := p.container(t, "alone", "sleep 300")
	waitState(t, alone, runtime.ContainerRunning)
	if ps, _ := execOut(t, alone, "ps"); strings.Contains(ps, "sleep 4242") {
		t.Errorf("a container without a target sees the app's processes:\n%s", ps)
	}
}

// TestMountPropagation: a HostToContainer mount of a shared host
// directory shows in the container a mount made on the host under it
// after the container started (CRI PROPAGATION_HOST_TO_CONTAINER); a
// private mount of the same directory does not.
func TestMountPropagation(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "propagation"))
	dir := mounttest.SharedDir(t)
	id := p.container(t, "app", "sleep 300", func(c *runtime.ContainerConfig) {
		c.Mounts = []runtime.Mount{
			{HostPath: dir, ContainerPath: "/h2c", Propagation: runtime.PropagationHostToContainer},
			{HostPath: dir, ContainerPath: "/private"},
		}
	})
	waitState(t, id, runtime.ContainerRunning)
	mounttest.Tmpfs(t, dir, "later", "from the host")
	if out, code := execOut(t, id, "cat", "/h2c/later/hello"); code != 0 || out != "from the host" {
		t.Errorf("HostToContainer: cat /h2c/later/hello: %d %q, want the host's mount", code, out)
	}
	if out, code := execOut(t, id, "cat", "/private/later/hello"); code == 0 {
		t.Errorf("a private mount shows the host's later mount: %q", out)
	}
}

// TestRecursiveReadOnly: on a runtime whose default handler reports
// recursive_read_only_mounts (containerd 2.x: make test-containerd2) a
// recursive read-only mount makes the submounts of the host directory
// read-only too, where a plain read-only mount leaves them writable; a
// runtime that reports no handler features (containerd 1.x) is refused
// before CreateContainer reaches it (it would ignore the field).
func TestRecursiveReadOnly(t *testing.T) {
	require(t)
	ctx := context.Background()
	p := runPod(t, sandboxConfig(t, "rro"))
	dir := t.TempDir()
	mounttest.Tmpfs(t, dir, "sub", "x")
	rro := runtime.Mount{HostPath: dir, ContainerPath: "/rro", ReadOnly: true, RecursiveReadOnly: true}
	ro := runtime.Mount{HostPath: dir, ContainerPath: "/ro", ReadOnly: true}
	v, err := testRuntime.Version(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := testRuntime.RecursiveReadOnlyMounts(ctx); err != nil {
		if !strings.HasPrefix(v.RuntimeVersion, "1.") {
			t.Fatalf("%s does not make recursive read-only mounts: %v", v, err)
		}
		if !strings.Contains(err.Error(), "reports no runtime handler features") {
			t.Errorf("RecursiveReadOnlyMounts on %s: %v", v, err)
		}
		cfg := runtimeConfig(p, "app", "sleep 300")
		cfg.Mounts = []runtime.Mount{rro}
		if _, err := testRuntime.CreateContainer(ctx, p.ID, cfg); !errors.Is(err, runtime.ErrInvalid) {
			t.Fatalf("a recursive read-only mount on %s: %v, want ErrInvalid", v, err)
		}
		return
	}
	id := p.container(t, "app", "sleep 300", func(c *runtime.ContainerConfig) { c.Mounts = []runtime.Mount{rro, ro} })
	waitState(t, id, runtime.ContainerRunning)
	if out, code := execOut(t, id, "touch", "/ro/sub/new"); code != 0 {
		t.Errorf("plain read-only mount: the submount is not writable: %s", out)
	}
	if out, code := execOut(t, id, "touch", "/rro/sub/other"); code == 0 || !strings.Contains(out, "Read-only file system") {
		t.Errorf("recursive read-only mount: touch in the submount: %d %q, want Read-only file system", code, out)
	}
}
