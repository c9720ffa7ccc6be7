package tugctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
)

// fakeNode is the kubelet's end of a real tunnel to the test apiserver: it
// answers NodeAPI calls from what it is given and records what it got, so
// tugctl's logs, exec and image commands are tested through the
// apiserver's relay.
type fakeNode struct {
	v1.UnimplementedNodeAPIServer
	name string

	mu       sync.Mutex
	logReqs  []*v1.LogsRequest
	imported [][]byte
	images   []*v1.ImageInfo
	resizes  []string
	forwards []string // "ns/pod:port" of each PortForward
	attaches []string // "ns/pod/container stdin=B tty=B" of each Attach
	// process answers Attach: what the container's process writes given
	// its stdin (read to its end first when attached with stdin), and
	// whether it then exits, with code; one that does not exit writes
	// until the client goes. Nil: Unimplemented.
	process func(st *v1.ExecStart, stdin string) (out string, exits bool, code int32)
	// stats answers Stats; check answers CheckService (nil: Unimplemented).
	stats *v1.StatsResponse
	check func(*v1.CheckServiceRequest) *v1.CheckServiceResponse
}

// startFakeNode serves a fake node named name over a tunnel to e's
// apiserver and waits until the apiserver has its tunnel.
func (e *env) startFakeNode(name string) *fakeNode {
	e.t.Helper()
	n := &fakeNode{name: name}
	srv := grpc.NewServer()
	v1.RegisterNodeAPIServer(srv, n)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tunnel.Serve(ctx, e.c, name, srv, nil) }()
	e.t.Cleanup(func() { cancel(); <-done })
	wait.Eventually(e.t, 10*time.Second, "the tunnel of "+name, func() error {
		if nodes := e.srv.Tunnels().Nodes(); !slices.Contains(nodes, name) {
			return fmt.Errorf("tunnels from %v", nodes)
		}
		return nil
	})
	return n
}

// Logs sends three lines naming the request's options; with follow it then
// sends a line every 20ms until the client goes away.
func (n *fakeNode) Logs(req *v1.LogsRequest, s v1.NodeAPI_LogsServer) error {
	n.mu.Lock()
	n.logReqs = append(n.logReqs, req)
	n.mu.Unlock()
	if req.Container == "missing" {
		return status.Error(codes.NotFound, `container "missing" not found in pod`)
	}
	for i := 1; i <= 3; i++ {
		line := fmt.Sprintf("%s/%s line %d\n", n.name, req.Pod, i)
		if err := s.Send(&v1.LogsChunk{Data: []byte(line)}); err != nil {
			return err
		}
	}
	for i := 4; req.Follow; i++ {
		select {
		case <-s.Context().Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
		if err := s.Send(&v1.LogsChunk{Data: []byte(fmt.Sprintf("%s/%s line %d\n", n.name, req.Pod, i))}); err != nil {
			return err
		}
	}
	return nil
}

// Exec runs a tiny shell: "echo ARGS", "cat" (stdin to stdout), "fail N"
// (stderr, exit N), "sleep" (until the caller goes away), "size" (waits
// for stdin EOF, then prints the resizes seen).
func (n *fakeNode) Exec(s v1.NodeAPI_ExecServer) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	var stdin bytes.Buffer
	if st.Stdin {
		for {
			m, err := s.Recv()
			if err != nil || m.StdinEof {
				break
			}
			if m.Resize != nil {
				n.mu.Lock()
				n.resizes = append(n.resizes, fmt.Sprintf("%dx%d", m.Resize.Width, m.Resize.Height))
				n.mu.Unlock()
			}
			stdin.Write(m.Stdin)
			if st.Tty && bytes.Contains(stdin.Bytes(), []byte("q")) {
				break // a terminal session ends on "q"
			}
		}
	}
	out := func(o *v1.ExecOutput) error { return s.Send(o) }
	header := fmt.Sprintf("%s/%s/%s tty=%v: ", n.name, st.Pod, st.Container, st.Tty)
	switch st.Command[0] {
	case "echo":
		return errors.Join(out(&v1.ExecOutput{Stdout: []byte(header + strings.Join(st.Command[1:], " ") + "\n")}), out(&v1.ExecOutput{Exited: true}))
	case "cat":
		return errors.Join(out(&v1.ExecOutput{Stdout: stdin.Bytes()}), out(&v1.ExecOutput{Exited: true}))
	case "fail":
		var code int32
		fmt.Sscan(st.Command[1], &code)
		return errors.Join(out(&v1.ExecOutput{Stderr: []byte("failing\n")}), out(&v1.ExecOutput{Exited: true, ExitCode: code}))
	case "sleep":
		if err := out(&v1.ExecOutput{Stdout: []byte("sleeping\n")}); err != nil {
			return err
		}
		<-s.Context().Done()
		return nil
	case "size":
		n.mu.Lock()
		sizes := strings.Join(n.resizes, ",")
		n.mu.Unlock()
		return errors.Join(out(&v1.ExecOutput{Stdout: []byte("sizes " + sizes + "\r\n")}), out(&v1.ExecOutput{Exited: true}))
	}
	return status.Errorf(codes.InvalidArgument, "start.command: %q not found", st.Command[0])
}

// ImportImage keeps the bytes and reports the image "imported:<size>".
func (n *fakeNode) ImportImage(s v1.NodeAPI_ImportImageServer) error {
	var got bytes.Buffer
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		got.Write(m.Data)
		if err := s.Send(&v1.ImportProgress{BytesReceived: int64(got.Len())}); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.imported = append(n.imported, got.Bytes())
	n.images = append(n.images, &v1.ImageInfo{Names: []string{fmt.Sprintf("example.com/imported:%d", got.Len())}, Id: "sha256:abc", SizeBytes: int64(got.Len())})
	n.mu.Unlock()
	return s.Send(&v1.ImportProgress{BytesReceived: int64(got.Len()), Images: []string{fmt.Sprintf("example.com/imported:%d", got.Len())}, Done: true})
}

func (n *fakeNode) ListImages(_ context.Context, req *v1.ListImagesRequest) (*v1.ListImagesResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return &v1.ListImagesResponse{NodeName: n.name, Images: append([]*v1.ImageInfo(nil), n.images...)}, nil
}

func (n *fakeNode) lastLogRequest() *v1.LogsRequest {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.logReqs) == 0 {
		return nil
	}
	return n.logReqs[len(n.logReqs)-1]
}

func (n *fakeNode) importedData() [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([][]byte(nil), n.imported...)
}

func (n *fakeNode) Stats(_ context.Context, req *v1.StatsRequest) (*v1.StatsResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stats == nil {
		return nil, status.Error(codes.Unavailable, "no stats")
	}
	return n.stats, nil
}

func (n *fakeNode) CheckService(_ context.Context, req *v1.CheckServiceRequest) (*v1.CheckServiceResponse, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.check == nil {
		return nil, status.Error(codes.Unimplemented, "no CheckService")
	}
	return n.check(req), nil
}

func (n *fakeNode) set(fn func(n *fakeNode)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fn(n)
}

// PortForward answers each connection with "POD:PORT got " and the bytes
// the client sent, once it has half-closed; port 9 refuses, as a closed
// port in the pod would.
func (n *fakeNode) PortForward(s v1.NodeAPI_PortForwardServer) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	n.mu.Lock()
	n.forwards = append(n.forwards, fmt.Sprintf("%s/%s:%d", st.Namespace, st.Pod, st.Port))
	n.mu.Unlock()
	if st.Port == 9 {
		return status.Errorf(codes.Unavailable, "error forwarding port 9 to pod %s: connection refused", st.Pod)
	}
	var got []byte
	for {
		f, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		got = append(got, f.Data...)
		if f.CloseWrite {
			break
		}
	}
	if err := s.Send(&v1.PortForwardFrame{Data: []byte(fmt.Sprintf("%s:%d got %s", st.Pod, st.Port, got))}); err != nil {
		return err
	}
	return s.Send(&v1.PortForwardFrame{CloseWrite: true})
}

// Attach plays the container's process that process describes.
func (n *fakeNode) Attach(s v1.NodeAPI_AttachServer) error {
	first, err := s.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	n.mu.Lock()
	n.attaches = append(n.attaches, fmt.Sprintf("%s/%s/%s stdin=%v tty=%v", st.Namespace, st.Pod, st.Container, st.Stdin, st.Tty))
	process := n.process
	n.mu.Unlock()
	if process == nil {
		return status.Error(codes.Unimplemented, "no attach")
	}
	var stdin bytes.Buffer
	for st.Stdin {
		m, err := s.Recv()
		if err != nil || m.StdinEof {
			break
		}
		stdin.Write(m.Stdin)
		if st.Tty && bytes.Contains(stdin.Bytes(), []byte("q")) {
			break // a terminal session ends on "q"
		}
	}
	out, exits, code := process(st, stdin.String())
	if err := s.Send(&v1.ExecOutput{Stdout: []byte(out)}); err != nil {
		return err
	}
	if exits {
		return s.Send(&v1.ExecOutput{Exited: true, ExitCode: code})
	}
	<-s.Context().Done()
	return nil
}
