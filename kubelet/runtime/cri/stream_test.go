package cri

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

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
