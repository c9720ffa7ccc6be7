package kubeapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// port-forward: Kubernetes' portforward.k8s.io protocol, SPDY streams in
// pairs (an "error" and a "data" stream per forwarded connection, tied by
// their requestID and naming the pod's port), either inside a WebSocket
// (subprotocol SPDY/3.1+portforward.k8s.io, kubectl ≥ 1.31's default) or
// over a plain SPDY upgrade (its fallback). Each pair becomes one
// NodeAPI.PortForward stream to the pod's kubelet over its tunnel, with
// half-closes passed on.

const portForwardProtocol = "portforward.k8s.io"

var tunnelProtocols = []string{"SPDY/3.1+" + portForwardProtocol}

func isSPDYUpgrade(r *http.Request) bool {
	return httpstream.IsUpgradeRequest(r) && strings.HasPrefix(strings.ToLower(r.Header.Get("Upgrade")), "spdy")
}

func (h *Handler) portForwardWebSocket(w http.ResponseWriter, r *http.Request, q *request) error {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil // the upgrader answered the client
	}
	defer conn.Close()
	if conn.Subprotocol() != tunnelProtocols[0] {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseProtocolError, "port-forward needs subprotocol "+tunnelProtocols[0]), time.Now().Add(time.Second))
		return nil
	}
	pf := &portForwarder{h: h, ctx: r.Context(), q: q, pairs: map[string]*streamPair{}}
	sc, err := spdy.NewServerConnectionWithPings(&wsConn{conn: conn}, pf.newStream, 30*time.Second)
	if err != nil {
		return nil
	}
	defer sc.Close()
	select {
	case <-sc.CloseChan():
	case <-r.Context().Done():
	}
	return nil
}

func (h *Handler) portForwardSPDY(w http.ResponseWriter, r *http.Request, q *request) error {
	if err := h.allowed(r.Context(), "create", "pods/portforward", q.namespace, q.name); err != nil {
		return err
	}
	if _, err := h.getObject(r.Context(), &request{res: q.res, namespace: q.namespace, name: q.name}); err != nil {
		return err
	}
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
		return nil // Handshake answered the client
	}
	pf := &portForwarder{h: h, ctx: r.Context(), q: q, pairs: map[string]*streamPair{}}
	conn := spdy.NewResponseUpgraderWithPings(30*time.Second).UpgradeResponse(w, r, pf.newStream)
	if conn == nil {
		return nil
	}
	defer conn.Close()
	select {
	case <-conn.CloseChan():
	case <-r.Context().Done():
	}
	return nil
}

type streamPair struct {
	data, errs httpstream.Stream
}

type portForwarder struct {
	h   *Handler
	ctx context.Context
	q   *request

	mu    sync.Mutex
	pairs map[string]*streamPair
}

// newStream collects a connection's two streams and starts forwarding
// once both came.
func (p *portForwarder) newStream(s httpstream.Stream, replySent <-chan struct{}) error {
	hd := s.Headers()
	id := hd.Get("requestID")
	p.mu.Lock()
	pair := p.pairs[id]
	if pair == nil {
		pair = &streamPair{}
		p.pairs[id] = pair
	}
	switch hd.Get("streamType") {
	case "data":
		pair.data = s
	case "error":
		pair.errs = s
	default:
		p.mu.Unlock()
		return apierrors.Invalid("streamType", "%q: want data or error", hd.Get("streamType"))
	}
	ready := pair.data != nil && pair.errs != nil
	if ready {
		delete(p.pairs, id)
	}
	p.mu.Unlock()
	if ready {
		go func() {
			<-replySent
			p.forward(pair)
		}()
	}
	return nil
}

// forward relays one connection to the pod's port and back.
func (p *portForwarder) forward(pair *streamPair) {
	defer pair.data.Reset()
	defer pair.errs.Close()
	port, err := strconv.Atoi(pair.data.Headers().Get("port"))
	if err != nil || port < 1 || port > 65535 {
		_, _ = io.WriteString(pair.errs, "invalid port "+pair.data.Headers().Get("port"))
		return
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	in := make(chan *v1.PortForwardFrame, 4)
	in <- &v1.PortForwardFrame{Start: &v1.PortForwardStart{Namespace: p.q.namespace, Pod: p.q.name, Port: int32(port)}}
	go func() {
		defer close(in)
		buf := make([]byte, 32<<10)
		for {
			n, err := pair.data.Read(buf)
			if n > 0 {
				select {
				case in <- &v1.PortForwardFrame{Data: append([]byte(nil), buf[:n]...)}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				select {
				case in <- &v1.PortForwardFrame{CloseWrite: true}:
				case <-ctx.Done():
				}
				return
			}
		}
	}()
	stream := &localStream[v1.PortForwardFrame, v1.PortForwardFrame]{ctx: ctx,
		recv: func() (*v1.PortForwardFrame, error) {
			select {
			case f, ok := <-in:
				if !ok {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return f, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		send: func(f *v1.PortForwardFrame) error {
			if len(f.Data) > 0 {
				if _, err := pair.data.Write(f.Data); err != nil {
					return err
				}
			}
			if f.CloseWrite {
				return pair.data.Close()
			}
			return nil
		}}
	start := &v1.PortForwardStart{Namespace: p.q.namespace, Pod: p.q.name, Port: int32(port)}
	_, err = p.h.b.Call(ctx, nodeService+"PortForward", start, func(ctx context.Context) (any, error) {
		stream.ctx = ctx
		return nil, p.h.b.Nodes().PortForward(stream)
	})
	if err != nil && ctx.Err() == nil {
		_, _ = io.WriteString(pair.errs, apierrors.FromGRPC(err).Error())
	}
}

// wsConn is a WebSocket connection as a byte stream (binary messages), the
// net.Conn the SPDY server runs on.
type wsConn struct {
	conn *websocket.Conn
	rmu  sync.Mutex
	cur  io.Reader
	wmu  sync.Mutex
}

func (c *wsConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.cur == nil {
			typ, r, err := c.conn.NextReader()
			if err != nil {
				if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
					return 0, io.EOF
				}
				return 0, err
			}
			if typ != websocket.BinaryMessage {
				continue
			}
			c.cur = r
		}
		n, err := c.cur.Read(p)
		if err == io.EOF {
			c.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.conn.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *wsConn) Close() error                       { return c.conn.Close() }
func (c *wsConn) LocalAddr() net.Addr                { return c.conn.LocalAddr() }
func (c *wsConn) RemoteAddr() net.Addr               { return c.conn.RemoteAddr() }
func (c *wsConn) SetDeadline(t time.Time) error      { return c.conn.NetConn().SetDeadline(t) }
func (c *wsConn) SetReadDeadline(t time.Time) error  { return c.conn.SetReadDeadline(t) }
func (c *wsConn) SetWriteDeadline(t time.Time) error { return c.conn.SetWriteDeadline(t) }
