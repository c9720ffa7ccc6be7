package cri

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/internal/syncbuf"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/server"
)

// TestAttach reads a running container's output through attach, and its
// exit code when it ends.
func TestAttach(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "attach"))
	id := p.container(t, "main", "sleep 1; for i in 1 2 3; do echo tick $i; sleep 0.2; done; exit 4")
	waitState(t, id, runtime.ContainerRunning)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := testRuntime.Attach(ctx, id, runtime.ExecRequest{Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "tick 3") {
		t.Errorf("attached output %q lacks tick 3", out.String())
	}
	if code != 4 {
		t.Errorf("attach returned exit code %d, want the process's 4", code)
	}
}

// TestAttachStdin writes to the stdin of a container made with stdin
// and stdinOnce (tugctl run -i): the process reads it to its end, which
// comes when the attached client closes its own.
func TestAttachStdin(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "attach-stdin"))
	id := p.container(t, "main", "tr a-z A-Z; exit 5", func(c *runtime.ContainerConfig) { c.Stdin, c.StdinOnce = true, true })
	waitState(t, id, runtime.ContainerRunning)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := testRuntime.Attach(ctx, id, runtime.ExecRequest{Stdin: strings.NewReader("hello stdin\n"), Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != "HELLO STDIN\n" || code != 5 {
		t.Errorf("attached with stdin: %q, exit %d; want HELLO STDIN and 5", out.String(), code)
	}
}

// TestPortForward reaches a server on a pod port through the runtime's
// streaming server, both ways, twice.
func TestPortForward(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "pf"))
	id := p.container(t, "srv", "while true; do echo pong | nc -l -p 7000 >/dev/null; done")
	waitState(t, id, runtime.ContainerRunning)
	for i := 0; i < 2; i++ {
		waitFor(t, "nc listening on 7000", func() bool {
			out, _ := execOut(t, id, "netstat", "-ltn")
			return strings.Contains(out, ":7000 ")
		})
		local, remote := net.Pipe()
		errc := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		go func() { errc <- testRuntime.PortForward(ctx, p.ID, 7000, remote) }()
		go func() { _, _ = local.Write([]byte("ping\n")) }()
		b := make([]byte, 5)
		readc := make(chan error, 1)
		go func() { _, err := io.ReadFull(local, b); readc <- err }()
		select {
		case err := <-readc:
			if err != nil {
				t.Fatalf("round %d: reading through the forward: %v", i, err)
			}
		case err := <-errc:
			t.Fatalf("round %d: port-forward ended before the answer: %v", i, err)
		}
		if string(b) != "pong\n" {
			t.Errorf("round %d: got %q through the forward, want pong", i, b)
		}
		local.Close()
		if err := <-errc; err != nil {
			t.Errorf("round %d: port-forward: %v", i, err)
		}
		cancel()
	}
}

// The kubelet's NodeAPI finds attach and port-forward on the runtime by
// these interfaces.
var (
	_ server.Attacher      = (*Runtime)(nil)
	_ server.PortForwarder = (*Runtime)(nil)
)

// TestAttachStdinOpenProcessExits attaches with stdin to a container made
// with stdin but not stdinOnce (an ephemeral container of kubectl debug
// -i): the process reads a line and exits while the client's stdin is
// still open. Attach must end with the process, with its exit code, as a
// Kubernetes attach session does.
func TestAttachStdinOpenProcessExits(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "attach-open"))
	id := p.container(t, "main", "read l; echo got-$l; exit 6", func(c *runtime.ContainerConfig) { c.Stdin = true })
	waitState(t, id, runtime.ContainerRunning)
	stdin, typed := io.Pipe()
	defer typed.Close()
	var out syncbuf.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := testRuntime.Attach(ctx, id, runtime.ExecRequest{Stdin: stdin, Stdout: &out, Stderr: &out})
		done <- result{code, err}
	}()
	// The line is typed once attached; stdin stays open after it.
	go func() { _, _ = typed.Write([]byte("hi\n")) }()
	r := <-done
	if r.err != nil {
		t.Fatalf("attach: %v (output %q)", r.err, out.String())
	}
	if !strings.Contains(out.String(), "got-hi") || r.code != 6 {
		t.Errorf("attached with stdin open: %q, exit %d; want got-hi and 6", out.String(), r.code)
	}
}

// TestAttachDetach: the client's stdin ends on a container made with
// stdin but not stdinOnce: the runtime detaches the session (-1) and the
// process runs on.
func TestAttachDetach(t *testing.T) {
	require(t)
	p := runPod(t, sandboxConfig(t, "attach-detach"))
	id := p.container(t, "main", "while true; do sleep 1; done", func(c *runtime.ContainerConfig) { c.Stdin = true })
	waitState(t, id, runtime.ContainerRunning)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out syncbuf.Buffer
	code, err := testRuntime.Attach(ctx, id, runtime.ExecRequest{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &out})
	if err != nil || code != -1 {
		t.Fatalf("attach with stdin ended at once: %d, %v; want -1 (detached)", code, err)
	}
	if st, err := testRuntime.ContainerStatus(ctx, id); err != nil || st.State != runtime.ContainerRunning {
		t.Errorf("after the detach the container is %+v, %v; want still running", st, err)
	}
}

// TestWaitExited: after an attach stream ends, the exit code is the one
// the container's status reports once the runtime has handled the exit,
// even when that lags well past the old second of polling (a loaded
// node); a process still running when the wait ends (a detach) or a
// cancelled ctx gives -1; a status error is returned.
func TestWaitExited(t *testing.T) {
	lagging := func(polls int) func(context.Context) (runtime.ContainerStatus, error) {
		n := 0
		return func(context.Context) (runtime.ContainerStatus, error) {
			if n++; n <= polls {
				return runtime.ContainerStatus{State: runtime.ContainerRunning}, nil
			}
			return runtime.ContainerStatus{State: runtime.ContainerExited, ExitCode: 7}, nil
		}
	}
	running := lagging(1 << 30)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	statusErr := errors.New("status unavailable")
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		wait    time.Duration
		status  func(context.Context) (runtime.ContainerStatus, error)
		want    int
		wantErr error
	}{
		{"exited at once", context.Background(), exitWait, lagging(0), 7, nil},
		{"status lags 30 polls", context.Background(), exitWait, lagging(30), 7, nil},
		{"detached, still running", context.Background(), 3 * exitPoll, running, -1, nil},
		{"ctx ended", cancelled, exitWait, running, -1, nil},
		{"status error", context.Background(), exitWait, func(context.Context) (runtime.ContainerStatus, error) {
			return runtime.ContainerStatus{}, statusErr
		}, 0, statusErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := waitExited(tc.ctx, tc.wait, tc.status)
			if got != tc.want || !errors.Is(err, tc.wantErr) {
				t.Errorf("waitExited = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
