package cri

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Exec, Attach and PortForward go through the runtime's streaming server:
// the CRI call returns a URL on the node (containerd serves it on
// 127.0.0.1), and the kubelet — which relays the stream over its own
// tunnel to the apiserver — connects to it with SPDY/3.1 and speaks
// Kubernetes' stream protocols: v4.channel.k8s.io for exec and attach (one
// stream each for stdin, stdout, stderr, terminal resizes and a final
// status), portforward.k8s.io for port forwarding (a data and an error
// stream per connection).

// Stream protocol names and headers (k8s.io/api/core/v1 and
// k8s.io/kubelet's remotecommand, which the runtime's server speaks).
const (
	protocolRemoteCommandV4 = "v4.channel.k8s.io"
	protocolPortForward     = "portforward.k8s.io"

	headerStreamType = "streamType"
	headerPort       = "port"
	headerRequestID  = "requestID"

	streamError  = "error"
	streamStdin  = "stdin"
	streamStdout = "stdout"
	streamStderr = "stderr"
	streamResize = "resize"
	streamData   = "data"
)

// Exec implements runtime.ContainerRuntime. ErrNotRunning if the
// container is not running; a command the runtime cannot start returns
// an error, not an exit code.
//
// A command without stdin or a terminal, run with a deadline (an exec
// probe), is an ExecSync with that timeout: the runtime kills it when the
// deadline passes, and its output arrives at the end. Any other command
// streams through the runtime's streaming server; cancelling ctx closes
// the stream, which ends a command that reads stdin or has a terminal
// (EOF, hangup) — deviation: as on a Kubernetes node, the runtime does not
// kill a streaming command that does neither.
func (r *Runtime) Exec(ctx context.Context, id string, req runtime.ExecRequest) (int, error) {
	if len(req.Cmd) == 0 {
		return 0, fmt.Errorf("exec in container %s: empty command: %w", id, runtime.ErrInvalid)
	}
	if err := r.requireRunning(ctx, id, "exec"); err != nil {
		return 0, err
	}
	if deadline, ok := ctx.Deadline(); ok && req.Stdin == nil && !req.TTY {
		return r.execSync(ctx, id, req, time.Until(deadline))
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.rs.Exec(cctx, &cri.ExecRequest{
		ContainerId: id, Cmd: req.Cmd, Tty: req.TTY,
		Stdin: req.Stdin != nil, Stdout: true, Stderr: req.Stderr != nil && !req.TTY,
	})
	cancel()
	if err != nil {
		return 0, wrap(err, "exec in container %s", id)
	}
	code, err := remoteCommand(ctx, resp.Url, streams{stdin: req.Stdin, stdout: orDiscard(req.Stdout), stderr: req.Stderr, tty: req.TTY, resize: req.Resize})
	if err != nil {
		return 0, fmt.Errorf("exec %q in container %s: %w", req.Cmd[0], id, err)
	}
	return code, nil
}

// ctxErr is ctx's error, also when its deadline has passed but its timer
// has not fired yet: the runtime, whose copy of the deadline came with the
// call, can end the call first (containerd 2.x resets the stream,
// RST_STREAM CANCEL), and the failure is still ctx's.
func ctxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// execSync runs a command to its end with a timeout (whole seconds, at
// least one), then writes its output.
func (r *Runtime) execSync(ctx context.Context, id string, req runtime.ExecRequest, timeout time.Duration) (int, error) {
	secs := max(int64((timeout+time.Second-1)/time.Second), 1)
	resp, err := r.rs.ExecSync(ctx, &cri.ExecSyncRequest{ContainerId: id, Cmd: req.Cmd, Timeout: secs})
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return 0, fmt.Errorf("exec %q in container %s: %w", req.Cmd[0], id, cerr)
		}
		if msg := describe(err); strings.Contains(msg, "timeout") && strings.Contains(msg, "exceeded") {
			return 0, fmt.Errorf("exec %q in container %s: %s: %w", req.Cmd[0], id, msg, context.DeadlineExceeded)
		}
		return 0, wrap(err, "exec %q in container %s", req.Cmd[0], id)
	}
	for _, o := range []struct {
		w io.Writer
		b []byte
	}{{req.Stdout, resp.Stdout}, {req.Stderr, resp.Stderr}} {
		if o.w != nil && len(o.b) > 0 {
			if _, err := o.w.Write(o.b); err != nil {
				return 0, err
			}
		}
	}
	return int(resp.ExitCode), nil
}

// Attach joins req's streams to a running container's main process
// (kubelet/server's Attacher): its output from now on, and its input if
// the container was made with stdin open; req.Cmd must be empty and
// req.TTY match the container's. It returns when the process exits —
// with its exit code, read from the container's status since the runtime
// does not send it over attach — or, with -1, when ctx ends or the
// stream is detached (stdin closed, the process still running).
// ErrNotRunning if the container is not running.
func (r *Runtime) Attach(ctx context.Context, id string, req runtime.ExecRequest) (int, error) {
	if len(req.Cmd) > 0 {
		return 0, fmt.Errorf("attach to container %s: a command: %w", id, runtime.ErrInvalid)
	}
	if err := r.requireRunning(ctx, id, "attach"); err != nil {
		return 0, err
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.rs.Attach(cctx, &cri.AttachRequest{
		ContainerId: id, Tty: req.TTY,
		Stdin: req.Stdin != nil, Stdout: req.Stdout != nil, Stderr: req.Stderr != nil && !req.TTY,
	})
	cancel()
	if err != nil {
		return 0, wrap(err, "attach to container %s", id)
	}
	var stdin *endReader
	s := streams{stdout: req.Stdout, stderr: req.Stderr, tty: req.TTY, resize: req.Resize}
	if req.Stdin != nil {
		stdin = &endReader{r: req.Stdin}
		s.stdin = stdin
	}
	if _, err := remoteCommand(ctx, resp.Url, s); err != nil {
		if ctx.Err() != nil {
			return -1, nil
		}
		return 0, fmt.Errorf("attach to container %s: %w", id, err)
	}
	// The runtime ends the stream when the process's output ends (it
	// exited), or when the client's stdin ends on a container without
	// stdinOnce (a detach: the process runs on). Only then may the
	// process still be running; otherwise it has exited, and its status
	// says so once the runtime has handled the exit, which on a loaded
	// node takes a while.
	wait := exitWait
	if stdin != nil && stdin.ended() {
		wait = detachWait
	}
	return waitExited(ctx, wait, func(ctx context.Context) (runtime.ContainerStatus, error) { return r.ContainerStatus(ctx, id) })
}

// How long Attach waits, after the stream ended, for the container's
// status to show the process exited: when it was a detach this is only
// the lag of a process that exits as its stdin closes.
const (
	exitWait   = 30 * time.Second
	detachWait = time.Second
	exitPoll   = 50 * time.Millisecond
)

// waitExited polls status until the container has exited and returns its
// exit code; -1 if it is still running after wait, or when ctx ends.
func waitExited(ctx context.Context, wait time.Duration, status func(context.Context) (runtime.ContainerStatus, error)) (int, error) {
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(exitPoll)
	defer tick.Stop()
	for {
		st, err := status(context.WithoutCancel(ctx))
		if err != nil {
			return 0, err
		}
		if st.State == runtime.ContainerExited {
			return st.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, nil
		case <-deadline.C:
			return -1, nil
		case <-tick.C:
		}
	}
}

// endReader tells whether its reader has ended (EOF or an error).
type endReader struct {
	r    io.Reader
	done atomic.Bool
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.done.Store(true)
	}
	return n, err
}

func (e *endReader) ended() bool { return e.done.Load() }

// streams are the local ends of a remote command.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	tty            bool
	resize         <-chan runtime.TerminalSize
}

// dial opens an SPDY connection to a streaming URL with protocol.
func dial(ctx context.Context, url, protocol string) (httpstream.Connection, error) {
	rt, err := spdy.NewRoundTripper(nil)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set(httpstream.HeaderProtocolVersion, protocol)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("streaming server %s: %w", req.URL.Host, err)
	}
	conn, err := rt.NewConnection(resp)
	if err != nil {
		return nil, fmt.Errorf("streaming server %s: %w", req.URL.Host, err)
	}
	if got := resp.Header.Get(httpstream.HeaderProtocolVersion); got != protocol {
		conn.Close()
		return nil, fmt.Errorf("streaming server %s: protocol %q, want %s", req.URL.Host, got, protocol)
	}
	return conn, nil
}

// remoteCommand runs the v4 remote command protocol on url: it opens the
// streams (all of them before any data flows, as the server expects),
// copies them until the remote process exits and its output is copied,
// and returns the exit code from the status the server sends last.
// Stdout and stderr are written one at a time (they may be one writer).
func remoteCommand(ctx context.Context, url string, s streams) (int, error) {
	conn, err := dial(ctx, url, protocolRemoteCommandV4)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	create := func(typ string) (httpstream.Stream, error) {
		h := http.Header{}
		h.Set(headerStreamType, typ)
		st, err := conn.CreateStream(h)
		if err != nil {
			return nil, fmt.Errorf("%s stream: %w", typ, err)
		}
		return st, nil
	}
	var errStream, in, out, errOut, resize httpstream.Stream
	for _, st := range []struct {
		typ  string
		want bool
		dst  *httpstream.Stream
	}{
		{streamError, true, &errStream},
		{streamStdin, s.stdin != nil, &in},
		{streamStdout, s.stdout != nil, &out},
		{streamStderr, s.stderr != nil && !s.tty, &errOut},
		{streamResize, s.tty, &resize},
	} {
		if !st.want {
			continue
		}
		if *st.dst, err = create(st.typ); err != nil {
			return 0, err
		}
	}

	statusc := make(chan statusResult, 1)
	go func() {
		b, err := io.ReadAll(errStream)
		statusc <- statusResult{b, err}
	}()
	if in != nil {
		go func() {
			_, _ = io.Copy(in, s.stdin)
			_ = in.Close() // half-close: the process sees EOF
		}()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range []struct {
		src httpstream.Stream
		dst io.Writer
	}{{out, s.stdout}, {errOut, s.stderr}} {
		if c.src == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(&lockedWriter{mu: &mu, w: c.dst}, c.src)
		}()
	}
	if resize != nil && s.resize != nil {
		go func() {
			enc := json.NewEncoder(resize)
			for {
				select {
				case <-ctx.Done():
					return
				case <-conn.CloseChan():
					return
				case sz, ok := <-s.resize:
					if !ok {
						return
					}
					if enc.Encode(terminalSize{Width: sz.Width, Height: sz.Height}) != nil {
						return
					}
				}
			}
		}()
	}
	copied := make(chan struct{})
	go func() { wg.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	select {
	case res := <-statusc:
		return exitCode(res)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

type terminalSize struct {
	Width  uint16
	Height uint16
}

type statusResult struct {
	body []byte
	err  error
}

// status is the part of a metav1.Status the v4 protocol sends on the error
// stream.
type exitStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Details *struct {
		Causes []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"causes"`
	} `json:"details"`
}

// exitCode reads the process's exit code from the final status: Success
// is 0, NonZeroExitCode carries the code, anything else is an error
// with the runtime's message (a command that could not start).
func exitCode(res statusResult) (int, error) {
	if res.err != nil && len(res.body) == 0 {
		return 0, fmt.Errorf("reading the exit status: %w", res.err)
	}
	if len(res.body) == 0 {
		return 0, nil // the stream ended without a status (attach)
	}
	var st exitStatus
	if err := json.Unmarshal(res.body, &st); err != nil {
		return 0, fmt.Errorf("the exit status %q: %w", res.body, err)
	}
	if st.Status == "Success" {
		return 0, nil
	}
	if st.Reason == "NonZeroExitCode" && st.Details != nil {
		for _, c := range st.Details.Causes {
			if c.Reason == "ExitCode" {
				if code, err := strconv.Atoi(c.Message); err == nil {
					return code, nil
				}
			}
		}
	}
	return 0, errors.New(strings.TrimSpace(st.Message))
}

// PortForward connects conn to port inside the sandbox's network
// namespace, through the runtime's streaming server, and copies both ways
// until either side closes or ctx ends.
func (r *Runtime) PortForward(ctx context.Context, sandboxID string, port int32, conn io.ReadWriter) error {
	cctx, cancel := r.call(ctx)
	resp, err := r.rs.PortForward(cctx, &cri.PortForwardRequest{PodSandboxId: sandboxID, Port: []int32{port}})
	cancel()
	if err != nil {
		return wrap(err, "port-forward to sandbox %s", sandboxID)
	}
	sc, err := dial(ctx, resp.Url, protocolPortForward)
	if err != nil {
		return fmt.Errorf("port-forward to sandbox %s port %d: %w", sandboxID, port, err)
	}
	defer sc.Close()
	h := http.Header{}
	h.Set(headerPort, strconv.Itoa(int(port)))
	h.Set(headerRequestID, "0")
	h.Set(headerStreamType, streamError)
	errStream, err := sc.CreateStream(h)
	if err != nil {
		return fmt.Errorf("port-forward error stream: %w", err)
	}
	_ = errStream.Close() // nothing to send on it
	h.Set(headerStreamType, streamData)
	data, err := sc.CreateStream(h)
	if err != nil {
		return fmt.Errorf("port-forward data stream: %w", err)
	}
	errc := make(chan error, 1)
	go func() {
		b, _ := io.ReadAll(errStream)
		if len(b) > 0 {
			errc <- fmt.Errorf("port-forward to sandbox %s port %d: %s", sandboxID, port, strings.TrimSpace(string(b)))
		}
	}()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(data, conn)
		_ = data.Close() // half-close: the pod side sees EOF
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(conn, data)
		done <- struct{}{}
	}()
	select {
	case <-done:
		// One direction ended: if the pod closed, the local side is done
		// too; if the local side closed, wait for the pod's answer.
		select {
		case <-done:
		case err := <-errc:
			return err
		case <-ctx.Done():
		case <-sc.CloseChan():
		}
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
