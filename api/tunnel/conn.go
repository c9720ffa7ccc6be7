// Package tunnel runs a gRPC connection backwards over a stream the kubelet
// opened to the apiserver, so the apiserver can call a kubelet it cannot
// dial (NAT, firewalls) — as Kubernetes' konnectivity does.
//
// The kubelet calls Serve: it opens NodeTunnel.Connect, names its node in
// the first frame, and serves its NodeAPI gRPC server on the stream, which it
// sees as a net.Conn. The apiserver's Registry accepts Connect streams and
// keeps, per node, a grpc.ClientConn dialled over that stream. A node has
// one tunnel: a second one is refused while the first still answers (it
// replaces only a tunnel that no longer does); a broken stream removes it.
//
// Several apiservers: the kubelet keeps one tunnel to every apiserver it is
// given (ServeAll, one Serve per address), rather than one tunnel and a
// relay between apiservers that finds the holder through Lease objects.
// Why: each apiserver then reaches each node in one hop with the
// authentication it already has (the kubelet's client certificate, the
// apiserver's own node authorization), apiservers need no credentials for
// one another, no peer discovery and no second stream hop whose failure
// modes (peer restarting, stale Lease) would add to the node's; losing one
// apiserver leaves every other one's tunnels untouched. The cost is one
// idle HTTP/2 stream per apiserver per node, a few KiB each. A node reaches
// only the apiservers it is told of: an apiserver added later is reached
// once the kubelet's --server lists it (behind a load balancer with one
// address there would be one tunnel, to whichever apiserver it picked).
package tunnel

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// streamConn adapts a message stream to net.Conn.
type streamConn struct {
	send  func([]byte) error
	recv  func() ([]byte, error)
	close func()

	rmu sync.Mutex
	buf []byte

	wmu sync.Mutex

	once   sync.Once
	closed chan struct{}
}

const maxFrame = 32 << 10

func newStreamConn(send func([]byte) error, recv func() ([]byte, error), closeFn func()) *streamConn {
	return &streamConn{send: send, recv: recv, close: closeFn, closed: make(chan struct{})}
}

func (c *streamConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.buf) == 0 {
		b, err := c.recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, io.EOF
			}
			return 0, err
		}
		c.buf = b
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (c *streamConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	written := 0
	for len(p) > 0 {
		n := min(len(p), maxFrame)
		chunk := make([]byte, n)
		copy(chunk, p[:n])
		if err := c.send(chunk); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

func (c *streamConn) Close() error {
	c.once.Do(func() {
		close(c.closed)
		c.close()
	})
	return nil
}

type tunnelAddr string

func (a tunnelAddr) Network() string { return "tunnel" }
func (a tunnelAddr) String() string  { return string(a) }

func (c *streamConn) LocalAddr() net.Addr                { return tunnelAddr("local") }
func (c *streamConn) RemoteAddr() net.Addr               { return tunnelAddr("remote") }
func (c *streamConn) SetDeadline(t time.Time) error      { return nil }
func (c *streamConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *streamConn) SetWriteDeadline(t time.Time) error { return nil }

// oneConnListener hands out one conn, then blocks until closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	ch     chan net.Conn
	closed chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	l := &oneConnListener{conn: c, ch: make(chan net.Conn, 1), closed: make(chan struct{})}
	l.ch <- c
	return l
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return tunnelAddr("tunnel") }
