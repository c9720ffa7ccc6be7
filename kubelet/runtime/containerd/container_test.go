package containerd

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/internal/syncbuf"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/mounttest"
)

// TestOOMKilled: a container past its memory limit is killed by the kernel
// and reported as OOMKilled.
func TestOOMKilled(t *testing.T) {
	e := newEnv(t)
	p := e.runPod("hog")
	// tail buffers /dev/zero looking for a newline that never comes.
	id := e.container(p, runtime.ContainerConfig{
		Name:      "hog",
		Command:   []string{"tail", "/dev/zero"},
		Resources: runtime.Resources{MemoryLimitBytes: 16 << 20},
	})
	st := e.waitState(id, runtime.ContainerExited, 30*time.Second)
	if st.Reason != runtime.ReasonOOMKilled || st.ExitCode != 137 {
		t.Fatalf("status %+v, want OOMKilled with exit code 137", st)
	}
}

// TestStopGracePeriod: a SIGTERM handler gets its time; a process that
// ignores SIGTERM is killed when the grace period ends.
func TestStopGracePeriod(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.runPod("graceful")
	polite := e.container(p, runtime.ContainerConfig{
		Name:    "polite",
		Command: []string{"sh", "-c", `trap 'echo got TERM; sleep 1; echo bye; exit 0' TERM; echo ready; while true; do sleep 0.1; done`},
	})
	stubborn := e.container(p, runtime.ContainerConfig{
		Name:    "stubborn",
		Command: []string{"sleep", "1000"}, // PID 1 without a handler: SIGTERM is ignored
	})
	pst := e.waitState(polite, runtime.ContainerRunning, 10*time.Second)
	waitLog(t, pst.LogPath, "ready", 5*time.Second)
	e.waitState(stubborn, runtime.ContainerRunning, 10*time.Second)

	type result struct {
		took time.Duration
		err  error
	}
	stop := func(id string, grace time.Duration) <-chan result {
		c := make(chan result, 1)
		go func() {
			start := time.Now()
			err := e.rt.StopContainer(ctx, id, grace)
			c <- result{time.Since(start), err}
		}()
		return c
	}
	pc, sc := stop(polite, 10*time.Second), stop(stubborn, time.Second)
	pr, sr := <-pc, <-sc
	if pr.err != nil || sr.err != nil {
		t.Fatalf("stop: %v, %v", pr.err, sr.err)
	}
	if pr.took < time.Second || pr.took > 8*time.Second {
		t.Errorf("polite container stopped after %s; its handler takes 1s of a 10s grace period", pr.took)
	}
	if sr.took < time.Second {
		t.Errorf("stubborn container stopped after %s, before its 1s grace period ended", sr.took)
	}
	pst, _ = e.rt.ContainerStatus(ctx, polite)
	if pst.ExitCode != 0 || pst.Reason != runtime.ReasonCompleted {
		t.Errorf("polite: %+v, want exit 0 Completed", pst)
	}
	if log := readLog(t, pst.LogPath); !strings.Contains(log, "got TERM") || !strings.Contains(log, "bye") {
		t.Errorf("polite log %q lacks the handler's output", log)
	}
	if sst, _ := e.rt.ContainerStatus(ctx, stubborn); sst.ExitCode != 137 || sst.Reason != runtime.ReasonError {
		t.Errorf("stubborn: %+v, want exit 137 Error", sst)
	}
	if err := e.rt.StopContainer(ctx, polite, time.Second); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
}

// TestExitAndStartError: exit codes are kept; a container is not started
// twice; an image without the command is a StartError.
func TestExitAndStartError(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.runPod("crash")
	id := e.container(p, runtime.ContainerConfig{Name: "crash", Command: []string{"sh", "-c", "echo oops; exit 3"}})
	st := e.waitState(id, runtime.ContainerExited, 10*time.Second)
	if st.ExitCode != 3 || st.Reason != runtime.ReasonError || st.FinishedAt.Before(st.StartedAt) {
		t.Errorf("status %+v, want exit 3 Error", st)
	}
	if log := readLog(t, st.LogPath); log != "oops\n" {
		t.Errorf("log %q", log)
	}
	if err := e.rt.StartContainer(ctx, id); !errors.Is(err, runtime.ErrInvalid) {
		t.Errorf("second start: %v, want ErrInvalid", err)
	}

	// The next attempt is a new container; the old one stays for --previous.
	next := e.container(p, runtime.ContainerConfig{Name: "crash", Attempt: 1, Command: []string{"true"}})
	if st := e.waitState(next, runtime.ContainerExited, 10*time.Second); st.ExitCode != 0 || st.Reason != runtime.ReasonCompleted || st.Attempt != 1 {
		t.Errorf("attempt 1: %+v", st)
	}
	cs, err := e.rt.ListContainers(ctx, runtime.ContainerFilter{SandboxID: p.ID, State: runtime.ContainerExited})
	if err != nil || len(cs) != 2 {
		t.Errorf("exited containers in the sandbox: %d %v, want 2", len(cs), err)
	}

	bad, err := e.rt.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "bad", Image: st.Image, Command: []string{"/no/such/binary"}, LogPath: st.LogPath + ".bad"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.rt.StartContainer(ctx, bad); err == nil {
		t.Fatal("starting a missing binary succeeded")
	}
	if st, _ := e.rt.ContainerStatus(ctx, bad); st.State != runtime.ContainerExited || st.Reason != runtime.ReasonStartError || st.ExitCode != 128 || !strings.Contains(st.Message, "no such") {
		t.Errorf("start error status %+v", st)
	}
}

// TestAdoption: a second Runtime on the same containerd (a restarted
// kubelet) finds the running container, unchanged, by its labels.
func TestAdoption(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.runPod("adopt")
	id := e.container(p, runtime.ContainerConfig{Name: "sleeper", Command: []string{"sleep", "1000"}, Labels: map[string]string{"tugboat.io/hash": "abc"}})
	before := e.waitState(id, runtime.ContainerRunning, 10*time.Second)

	rt2, err := New(Config{Address: testContainerd.Address}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt2.Close()
	sbs, err := rt2.ListPodSandbox(ctx, runtime.SandboxFilter{PodUID: p.UID})
	if err != nil || len(sbs) != 1 || sbs[0].ID != p.ID || sbs[0].Config.NetNSPath != p.NetNS {
		t.Fatalf("sandboxes after restart: %+v %v", sbs, err)
	}
	cs, err := rt2.ListContainers(ctx, runtime.ContainerFilter{PodUID: p.UID, State: runtime.ContainerRunning})
	if err != nil || len(cs) != 1 {
		t.Fatalf("containers after restart: %+v %v", cs, err)
	}
	after := cs[0]
	if after.ID != id || after.PID != before.PID || !after.StartedAt.Equal(before.StartedAt) || after.Labels["tugboat.io/hash"] != "abc" || after.Pod != before.Pod {
		t.Errorf("adopted %+v, was %+v", after, before)
	}
	if err := rt2.StopContainer(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.rt.ContainerStatus(ctx, id); st.State != runtime.ContainerExited || st.ExitCode != 137 {
		t.Errorf("after SIGKILL with no grace: %+v", st)
	}
}

// TestExecTTY: a terminal exec sees the size sent on the resize channel.
func TestExecTTY(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.runPod("tty")
	id := e.container(p, runtime.ContainerConfig{Name: "sleeper", Command: []string{"sleep", "1000"}})
	e.waitState(id, runtime.ContainerRunning, 10*time.Second)

	resize := make(chan runtime.TerminalSize, 1)
	resize <- runtime.TerminalSize{Width: 100, Height: 40}
	var out syncbuf.Buffer
	code, err := e.rt.Exec(ctx, id, runtime.ExecRequest{
		Cmd:    []string{"sh", "-c", `for i in $(seq 50); do s=$(stty size); if [ "$s" = "40 100" ]; then echo "size $s"; tty; exit 0; fi; sleep 0.1; done; exit 1`},
		Stdout: &out, TTY: true, Resize: resize,
	})
	if err != nil || code != 0 {
		t.Fatalf("exec: code %d err %v output %q", code, err, out.String())
	}
	if !strings.Contains(out.String(), "size 40 100") || !strings.Contains(out.String(), "/dev/pts/") {
		t.Errorf("tty exec output %q", out.String())
	}
}

// TestVersion: the runtime names containerd; an unreachable socket is
// ErrUnavailable (ContainerRuntimeNotReady).
func TestVersion(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	v, err := e.rt.Version(ctx)
	if err != nil || v.RuntimeName != "containerd" || v.RuntimeVersion == "" {
		t.Fatalf("Version = %+v, %v", v, err)
	}
	t.Logf("runtime %s", v)
	dead, err := New(Config{Address: filepath.Join(t.TempDir(), "no.sock")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := dead.Version(cctx); !errors.Is(err, runtime.ErrUnavailable) {
		t.Errorf("Version on a missing socket: %v, want ErrUnavailable", err)
	}
}

// TestPIDTarget: a container made with PIDTargetID (an ephemeral
// container's targetContainerName) joins the target's process namespace:
// its ps shows the target's process.
func TestPIDTarget(t *testing.T) {
	e := newEnv(t)
	p := e.runPod("pidtarget")
	target := e.container(p, runtime.ContainerConfig{Name: "app", Command: []string{"sleep", "4242"}})
	e.waitState(target, runtime.ContainerRunning, 10*time.Second)
	dbg := e.container(p, runtime.ContainerConfig{Name: "debugger", Command: []string{"sh", "-c", "ps; sleep 300"}, PIDTargetID: target})
	st := e.waitState(dbg, runtime.ContainerRunning, 10*time.Second)
	waitLog(t, st.LogPath, "sleep 4242", 10*time.Second)
}

// TestMountPropagation: on the native backend a HostToContainer mount
// (rslave) of a shared host directory shows a mount made on the host
// under it after the container started, a private one (rprivate) does
// not; Bidirectional of a private host directory is refused with
// containerd CRI's message.
func TestMountPropagation(t *testing.T) {
	e := newEnv(t)
	p := e.runPod("propagation")
	dir := mounttest.SharedDir(t)
	var out syncbuf.Buffer // the exec writes stdout and stderr from two goroutines
	id := e.container(p, runtime.ContainerConfig{Name: "app", Command: []string{"sleep", "300"}, Mounts: []runtime.Mount{
		{HostPath: dir, ContainerPath: "/h2c", Propagation: runtime.PropagationHostToContainer},
		{HostPath: dir, ContainerPath: "/private"},
	}})
	e.waitState(id, runtime.ContainerRunning, 10*time.Second)
	mounttest.Tmpfs(t, dir, "later", "from the host")
	ctx := context.Background()
	if code, err := e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"cat", "/h2c/later/hello"}, Stdout: &out, Stderr: &out}); err != nil || code != 0 || out.String() != "from the host" {
		t.Errorf("HostToContainer: cat /h2c/later/hello: %d %v %q, want the host's mount", code, err, out.String())
	}
	out.Reset()
	if code, err := e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"cat", "/private/later/hello"}, Stdout: &out, Stderr: &out}); err != nil || code == 0 {
		t.Errorf("a private mount shows the host's later mount: %d %v %q", code, err, out.String())
	}
	private := t.TempDir()
	_, err := e.rt.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "bidi", Image: images.BusyboxRef, LogPath: filepath.Join(p.Dir, "logs", "bidi", "0.log"),
		Mounts: []runtime.Mount{{HostPath: private, ContainerPath: "/b", Propagation: runtime.PropagationBidirectional}}})
	if !errors.Is(err, runtime.ErrInvalid) || !strings.Contains(err.Error(), "but it is not a shared mount") {
		t.Errorf("Bidirectional of a private host directory: %v", err)
	}
}

// TestRecursiveReadOnly: runc's rro option makes the submounts of a
// read-only mount read-only too (a plain read-only mount leaves them
// writable), where runc and the kernel support it (runc 1.1+, Linux
// 5.12+: RecursiveReadOnlyMounts); else such a mount is refused.
func TestRecursiveReadOnly(t *testing.T) {
	e := newEnv(t)
	p := e.runPod("rro")
	dir := t.TempDir()
	mounttest.Tmpfs(t, dir, "sub", "x")
	ctx := context.Background()
	rro := runtime.Mount{HostPath: dir, ContainerPath: "/rro", ReadOnly: true, RecursiveReadOnly: true}
	if err := e.rt.RecursiveReadOnlyMounts(ctx); err != nil {
		t.Logf("no recursive read-only mounts here: %v", err)
		_, err := e.rt.CreateContainer(ctx, p.ID, runtime.ContainerConfig{Name: "app", Image: images.BusyboxRef, LogPath: filepath.Join(p.Dir, "logs", "app", "0.log"), Mounts: []runtime.Mount{rro}})
		if !errors.Is(err, runtime.ErrInvalid) {
			t.Fatalf("a recursive read-only mount without support: %v, want ErrInvalid", err)
		}
		return
	}
	id := e.container(p, runtime.ContainerConfig{Name: "app", Command: []string{"sleep", "300"}, Mounts: []runtime.Mount{
		rro, {HostPath: dir, ContainerPath: "/ro", ReadOnly: true},
	}})
	e.waitState(id, runtime.ContainerRunning, 10*time.Second)
	var out syncbuf.Buffer // the exec writes stdout and stderr from two goroutines
	if code, err := e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"touch", "/ro/sub/new"}, Stdout: &out, Stderr: &out}); err != nil || code != 0 {
		t.Errorf("plain read-only mount: the submount is not writable: %d %v %q", code, err, out.String())
	}
	out.Reset()
	if code, err := e.rt.Exec(ctx, id, runtime.ExecRequest{Cmd: []string{"touch", "/rro/sub/other"}, Stdout: &out, Stderr: &out}); err != nil || code == 0 || !strings.Contains(out.String(), "Read-only file system") {
		t.Errorf("recursive read-only mount: touch in the submount: %d %v %q, want Read-only file system", code, err, out.String())
	}
}
