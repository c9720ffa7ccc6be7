package server

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// echoServer listens on the node's loopback and answers each connection
// with "echo:" and everything it read, after the client half-closed.
func echoServer(t *testing.T) int32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write(append([]byte("echo:"), b...))
			}()
		}
	}()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

// forward sends data on one port-forward stream, half-closes, and returns
// what came back until the pod's side closed.
func forward(t *testing.T, api v1.NodeAPIClient, pod string, port int32, data ...string) (string, error) {
	t.Helper()
	st, err := api.PortForward(context.Background())
	if err != nil {
		return "", err
	}
	if err := st.Send(&v1.PortForwardFrame{Start: &v1.PortForwardStart{Namespace: "default", Pod: pod, Port: port}}); err != nil {
		return "", err
	}
	for _, d := range data {
		st.Send(&v1.PortForwardFrame{Data: []byte(d)})
	}
	st.Send(&v1.PortForwardFrame{CloseWrite: true})
	var got strings.Builder
	for {
		f, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return got.String(), nil
		}
		if err != nil {
			return got.String(), apierrors.FromGRPC(err)
		}
		got.Write(f.Data)
		if f.CloseWrite {
			// The pod's side is done; the stream ends next.
			if _, err := st.Recv(); !errors.Is(err, io.EOF) {
				return got.String(), err
			}
			return got.String(), nil
		}
	}
}

func TestPortForward(t *testing.T) {
	api, _, _, _ := setup(t)
	port := echoServer(t)
	big := strings.Repeat("0123456789", 20000) // several frames each way
	got, err := forward(t, api, "web", port, "hello ", big)
	if err != nil || got != "echo:hello "+big {
		t.Fatalf("forwarded %d bytes (%.40q...), %v; want the echo of %d", len(got), got, err, len("echo:hello ")+len(big))
	}
	// A port nothing listens on: Unavailable, naming the pod and the port.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := int32(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	_, err = forward(t, api, "web", closed, "x")
	if !errors.Is(err, apierrors.ErrUnavailable) || !strings.Contains(err.Error(), "error forwarding port "+strconv.Itoa(int(closed))+" to pod default/web") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("forward to a closed port: %v", err)
	}
	for _, tc := range []struct {
		pod  string
		port int32
		want string
	}{
		{"web", 0, "start.port: 0 is not a TCP port"},
		{"nope", port, "not found"},
	} {
		if _, err := forward(t, api, tc.pod, tc.port); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("forward to %s:%d: %v, want %q", tc.pod, tc.port, err, tc.want)
		}
	}
}

func TestAttach(t *testing.T) {
	api, _, _, _ := setup(t)
	attach := func(start *v1.ExecStart, stdin string) (string, int32, error) {
		st, err := api.Attach(context.Background())
		if err != nil {
			return "", 0, err
		}
		st.Send(&v1.ExecInput{Start: start})
		if stdin != "" {
			st.Send(&v1.ExecInput{Stdin: []byte(stdin)})
			st.Send(&v1.ExecInput{StdinEof: true})
		}
		var out string
		for {
			m, err := st.Recv()
			if err != nil {
				return out, -1, apierrors.FromGRPC(err)
			}
			out += string(m.Stdout)
			if m.Exited {
				return out, m.ExitCode, nil
			}
		}
	}
	// The container's terminal, whatever the client asked; stdin passed.
	out, code, err := attach(&v1.ExecStart{Pod: "att", Stdin: true}, "typed")
	if err != nil || out != `attached to c3 tty=true read "typed"` || code != 5 {
		t.Fatalf("attach: %q %d %v", out, code, err)
	}
	for _, tc := range []struct {
		start *v1.ExecStart
		want  string
	}{
		{&v1.ExecStart{Pod: "web", Stdin: true}, "was not made with stdin: true"},
		{&v1.ExecStart{Pod: "web", Command: []string{"sh"}}, "no command"},
		{&v1.ExecStart{Pod: "nope"}, "not found"},
	} {
		if _, _, err := attach(tc.start, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("attach %v: %v, want %q", tc.start, err, tc.want)
		}
	}
}
