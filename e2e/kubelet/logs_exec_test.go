package kubelet_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/e2e/cluster"
)

// TestLogsAndExec: logs -f streams a running container's output, --tail
// and --previous work, and exec returns output and exit code, takes stdin
// and runs a terminal that follows resizes — all through the apiserver,
// over the tunnel the kubelet opened.
func TestLogsAndExec(t *testing.T) {
	c := sharedCluster(t)
	t.Parallel()
	ns, name := "logs", "talker"
	createPod(t, c.Client, busyboxPod(ns, name, "node2", `i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.1; done`))
	waitPod(t, c.Client, ns, name, 60*time.Second, "Running", running)
	api := v1.NewNodeAPIClient(c.Client.Conn())

	// logs -f: lines keep arriving, in order.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := api.Logs(ctx, &v1.LogsRequest{Namespace: ns, Pod: name, Follow: true, TailLines: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for strings.Count(got.String(), "\n") < 10 {
		m, err := st.Recv()
		if err != nil {
			t.Fatalf("follow: %v after %q", err, got.String())
		}
		got.Write(m.Data)
	}
	cancel()
	lines := strings.Split(strings.TrimSpace(got.String()), "\n")
	var prev int
	for i, l := range lines {
		var n int
		if _, err := fmt.Sscanf(l, "line %d", &n); err != nil {
			t.Fatalf("odd log line %q", l)
		}
		if i > 0 && n != prev+1 {
			t.Fatalf("lines out of order: %q", lines)
		}
		prev = n
	}

	// --tail without follow.
	tail := readAllLogs(t, api, &v1.LogsRequest{Namespace: ns, Pod: name, TailLines: 3})
	if n := strings.Count(tail, "\n"); n != 3 {
		t.Errorf("--tail 3 gave %d lines: %q", n, tail)
	}
	// --timestamps: a CRI runtime's log has each line's time.
	stamped, err := readLogs(api, &v1.LogsRequest{Namespace: ns, Pod: name, TailLines: 2, Timestamps: true})
	if c.Runtime == cluster.RuntimeCRI {
		for _, l := range strings.Split(strings.TrimSpace(stamped), "\n") {
			ts, rest, _ := strings.Cut(l, " ")
			if _, perr := time.Parse(time.RFC3339Nano, ts); perr != nil || !strings.HasPrefix(rest, "line ") {
				t.Errorf("--timestamps line %q (err %v, %v): want TIME line N", l, err, perr)
			}
		}
	} else if err == nil || !strings.Contains(err.Error(), "timestamps: not supported") {
		t.Errorf("--timestamps on the native backend: %q, %v", stamped, err)
	}
	// --previous of a container that never restarted.
	if _, err := readLogs(api, &v1.LogsRequest{Namespace: ns, Pod: name, Previous: true}); err == nil || !strings.Contains(err.Error(), "previous terminated container") {
		t.Errorf("--previous: %v", err)
	}

	// exec: output, stderr and the exit code.
	out, code := execIn(t, c.Client, ns, name, "sh", "-c", "echo out; echo err >&2; exit 7")
	if code != 7 || !strings.Contains(out, "out\n") || !strings.Contains(out, "err\n") {
		t.Errorf("exec: code %d output %q", code, out)
	}
	// exec -i: stdin.
	es, err := api.Exec(ctxFor(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	es.Send(&v1.ExecInput{Start: &v1.ExecStart{Namespace: ns, Pod: name, Command: []string{"tr", "a-z", "A-Z"}, Stdin: true}})
	es.Send(&v1.ExecInput{Stdin: []byte("shout\n")})
	es.Send(&v1.ExecInput{StdinEof: true})
	if out, code := collectExec(t, es); out != "SHOUT\n" || code != 0 {
		t.Errorf("exec -i: %q code %d", out, code)
	}
	// exec -it: a terminal that follows resizes.
	es, err = api.Exec(ctxFor(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The command waits until the terminal has a size (busybox's stty
	// prints nothing while it is 0x0), then prints it.
	es.Send(&v1.ExecInput{Start: &v1.ExecStart{Namespace: ns, Pod: name, Tty: true,
		Command: []string{"sh", "-c", `until s=$(stty size 2>/dev/null); [ -n "$s" ] && [ "$s" != "0 0" ]; do sleep 0.05; done; echo "$s"; tty`}}})
	es.Send(&v1.ExecInput{Resize: &v1.TerminalSize{Width: 123, Height: 45}})
	if out, code := collectExec(t, es); code != 0 || !strings.Contains(out, "45 123") || !strings.Contains(out, "/dev/pts/") {
		t.Errorf("exec -it: %q code %d", out, code)
	}
	// A command that is not in the image.
	if out, code := execIn(t, c.Client, ns, name, "no-such-command"); code != 126 || !strings.Contains(out, "no-such-command") {
		t.Errorf("exec of a missing command: %q code %d", out, code)
	}
}

func collectExec(t *testing.T, es v1.NodeAPI_ExecClient) (string, int32) {
	t.Helper()
	var out strings.Builder
	for {
		m, err := es.Recv()
		if err != nil {
			t.Fatalf("exec: %v after %q", err, out.String())
		}
		out.Write(m.Stdout)
		out.Write(m.Stderr)
		if m.Exited {
			return out.String(), m.ExitCode
		}
	}
}

func readLogs(api v1.NodeAPIClient, req *v1.LogsRequest) (string, error) {
	st, err := api.Logs(context.Background(), req)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), apierrors.FromGRPC(err)
		}
		b.Write(m.Data)
	}
}

func readAllLogs(t *testing.T, api v1.NodeAPIClient, req *v1.LogsRequest) string {
	t.Helper()
	s, err := readLogs(api, req)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
