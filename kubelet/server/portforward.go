package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/internal/netns"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// PortForwarder is implemented by runtimes that own the pod network (the
// CRI backend: the runtime's streaming server connects inside the
// sandbox). PortForward connects conn to port inside the sandbox's network
// namespace and copies both ways until either side is done or ctx ends;
// conn's Read returns io.EOF once the client has no more to send.
// Runtimes without it (the native backend) name the sandbox's network
// namespace in its config, and the server dials there itself.
type PortForwarder interface {
	PortForward(ctx context.Context, sandboxID string, port int32, conn io.ReadWriter) error
}

// PortForward implements NodeAPI.PortForward: one TCP connection to a port
// on the pod's localhost, inside its network namespace (the node's, for a
// hostNetwork pod), as Kubernetes' port-forward connects. The connection
// is made before the first byte is relayed, so a refused one ends the
// stream with Unavailable naming the pod and the port.
func (s *Server) PortForward(stream v1.NodeAPI_PortForwardServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	st := first.GetStart()
	if st == nil {
		return errorf(apierrors.ErrInvalid, "start: the first port-forward frame must name the pod and port")
	}
	if st.Port < 1 || st.Port > 65535 {
		return errorf(apierrors.ErrInvalid, "start.port: %d is not a TCP port (1-65535)", st.Port)
	}
	ns := namespaceOr(st.Namespace)
	pod, ok := s.cfg.Pods.Get(ns + "/" + st.Pod)
	if !ok {
		return errorf(apierrors.ErrNotFound, "pod %s/%s not found on node %s", ns, st.Pod, s.cfg.NodeName)
	}
	sb, err := s.sandbox(ctx, pod)
	if err != nil {
		return grpcErr(err)
	}
	log := s.log.With("pod", ns+"/"+st.Pod, "port", st.Port)
	conn := &frameConn{stream: stream, first: first.Data}
	if first.CloseWrite {
		conn.eof = true
	}
	if pf, ok := s.cfg.Streams.(PortForwarder); ok {
		err = pf.PortForward(ctx, sb.ID, st.Port, conn)
	} else {
		err = s.forwardInNetNS(ctx, sb, st.Port, conn)
	}
	if err != nil {
		log.Info("port-forward failed", "err", err)
		if ctx.Err() != nil {
			return grpcErr(ctx.Err())
		}
		return errorf(apierrors.ErrUnavailable, "error forwarding port %d to pod %s/%s, uid %s: %v", st.Port, ns, st.Pod, pod.GetMetadata().GetUid(), err)
	}
	return conn.CloseWrite()
}

// sandbox is the pod's ready sandbox, the newest if there are several.
func (s *Server) sandbox(ctx context.Context, pod *v1.Pod) (runtime.SandboxStatus, error) {
	sbs, err := s.cfg.Runtime.ListPodSandbox(ctx, runtime.SandboxFilter{PodUID: pod.GetMetadata().GetUid(), State: runtime.SandboxReady})
	if err != nil {
		return runtime.SandboxStatus{}, apierrors.New(apierrors.ErrUnavailable, "listing the sandboxes of pod %s: %v", pod.GetMetadata().GetName(), err)
	}
	if len(sbs) == 0 {
		return runtime.SandboxStatus{}, apierrors.New(apierrors.ErrInvalid, "pod %s/%s has no running sandbox on node %s (is it running? see tugctl describe pod %s)",
			pod.GetMetadata().GetNamespace(), pod.GetMetadata().GetName(), s.cfg.NodeName, pod.GetMetadata().GetName())
	}
	newest := sbs[0]
	for _, sb := range sbs[1:] {
		if sb.CreatedAt.After(newest.CreatedAt) {
			newest = sb
		}
	}
	return newest, nil
}

// forwardInNetNS dials localhost:port in the sandbox's network namespace
// (a socket stays in the namespace it was made in) and copies both ways,
// passing half-closes on.
func (s *Server) forwardInNetNS(ctx context.Context, sb runtime.SandboxStatus, port int32, conn *frameConn) error {
	addr := net.JoinHostPort("localhost", strconv.Itoa(int(port)))
	var c net.Conn
	dial := func() error {
		var err error
		d := net.Dialer{Timeout: 10 * time.Second}
		c, err = d.DialContext(ctx, "tcp", addr)
		return err
	}
	var err error
	if sb.Config.HostNetwork || sb.Config.NetNSPath == "" {
		err = dial()
	} else {
		err = netns.DoPath(sb.Config.NetNSPath, dial)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	go func() {
		<-ctx.Done()
		c.Close()
	}()
	tcp := c.(*net.TCPConn)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := io.Copy(tcp, conn); err == nil {
			_ = tcp.CloseWrite()
		} else {
			c.Close()
		}
	}()
	_, err = io.Copy(conn, tcp)
	if err == nil {
		err = conn.CloseWrite()
	}
	wg.Wait()
	if err != nil && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// frameConn is the client's end of a port-forward stream as an
// io.ReadWriter: Read returns the bytes of the client's data frames and
// io.EOF after its close_write (or the end of its stream); Write sends
// data frames.
type frameConn struct {
	stream v1.NodeAPI_PortForwardServer
	first  []byte // data carried by the first frame
	buf    []byte
	eof    bool

	mu     sync.Mutex // serializes sends
	closed bool
}

func (c *frameConn) Read(p []byte) (int, error) {
	if len(c.buf) == 0 && len(c.first) > 0 {
		c.buf, c.first = c.first, nil
	}
	for len(c.buf) == 0 {
		if c.eof {
			return 0, io.EOF
		}
		f, err := c.stream.Recv()
		if errors.Is(err, io.EOF) {
			c.eof = true
			continue
		}
		if err != nil {
			return 0, err
		}
		c.buf = f.Data
		c.eof = f.CloseWrite
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

// maxFrame bounds the bytes of one data frame.
const maxFrame = 32 << 10

func (c *frameConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, fmt.Errorf("port-forward: write after close")
	}
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), maxFrame)]
		if err := c.stream.Send(&v1.PortForwardFrame{Data: append([]byte(nil), chunk...)}); err != nil {
			return n, err
		}
		n += len(chunk)
		p = p[len(chunk):]
	}
	return n, nil
}

// CloseWrite tells the client the pod's side has no more to send (once).
func (c *frameConn) CloseWrite() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return c.stream.Send(&v1.PortForwardFrame{CloseWrite: true})
}
