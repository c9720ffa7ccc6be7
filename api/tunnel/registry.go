package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Registry is the apiserver's end: it implements NodeTunnel.Connect and
// hands out a NodeAPI client per connected node. A node has at most one
// tunnel: a second Connect for a node whose tunnel answers is refused
// (AlreadyExists), never silently put in its place; it replaces only a
// tunnel that no longer answers (a kubelet that restarted before the old
// stream broke).
type Registry struct {
	v1.UnimplementedNodeTunnelServer
	log *slog.Logger
	// Authorize, if set, checks that the caller of Connect may serve node.
	Authorize func(ctx context.Context, node string) error
	// Audit, if set, is told of every connect (err nil: accepted), of
	// refusals and of the tunnel's end (event "closed").
	Audit func(ctx context.Context, node, event string, err error)
	// ProbeTimeout bounds the check that a node's tunnel still answers
	// (default 3s).
	ProbeTimeout time.Duration

	mu    sync.Mutex
	nodes map[string]*entry
}

type entry struct {
	conn   *grpc.ClientConn
	cancel context.CancelCauseFunc
	since  time.Time
	from   string
}

// NewRegistry makes an empty registry.
func NewRegistry(log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	return &Registry{log: log, nodes: map[string]*entry{}}
}

func (r *Registry) audit(ctx context.Context, node, event string, err error) {
	if r.Audit != nil {
		r.Audit(ctx, node, event, err)
	}
}

// Connect implements NodeTunnel.Connect; it returns when the tunnel breaks.
func (r *Registry) Connect(stream v1.NodeTunnel_ConnectServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	node := first.NodeName
	if node == "" {
		return apierrors.Invalid("nodeName", "the first tunnel frame must name the node")
	}
	if r.Authorize != nil {
		if err := r.Authorize(stream.Context(), node); err != nil {
			r.audit(stream.Context(), node, "connect", err)
			return err
		}
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	conn := newStreamConn(
		func(b []byte) error { return stream.Send(&v1.TunnelFrame{Data: b}) },
		func() ([]byte, error) {
			f, err := stream.Recv()
			if err != nil {
				return nil, err
			}
			return f.Data, nil
		},
		func() { cancel(nil) },
	)
	used := false
	var umu sync.Mutex
	cc, err := grpc.NewClient("passthrough:///node-"+node,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20)),
		grpc.WithContextDialer(func(context.Context, string) (net.Conn, error) {
			umu.Lock()
			defer umu.Unlock()
			if used {
				return nil, fmt.Errorf("tunnel to node %s closed", node)
			}
			used = true
			return conn, nil
		}))
	if err != nil {
		return err
	}
	defer cc.Close()
	defer conn.Close()
	from := ""
	if p, ok := peer.FromContext(stream.Context()); ok {
		from = p.Addr.String()
	}
	e := &entry{conn: cc, cancel: cancel, since: time.Now(), from: from}
	if err := r.register(ctx, node, e); err != nil {
		r.audit(stream.Context(), node, "connect", err)
		return err
	}
	cc.Connect()
	r.log.Info("node tunnel connected", "node", node, "from", from)
	r.audit(stream.Context(), node, "connect", nil)
	<-ctx.Done()
	r.mu.Lock()
	if r.nodes[node] == e {
		delete(r.nodes, node)
	}
	r.mu.Unlock()
	cause := context.Cause(ctx)
	r.log.Info("node tunnel closed", "node", node, "from", from, "why", cause)
	r.audit(stream.Context(), node, "closed", nil)
	if cause != nil && stream.Context().Err() == nil && !errors.Is(cause, context.Canceled) {
		return cause // closed by the apiserver: the kubelet learns why
	}
	return nil
}

// register makes e node's tunnel, unless node has one that still answers.
func (r *Registry) register(ctx context.Context, node string, e *entry) error {
	for {
		r.mu.Lock()
		old := r.nodes[node]
		if old == nil {
			r.nodes[node] = e
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock()
		if r.answers(ctx, old) {
			return apierrors.New(apierrors.ErrAlreadyExists,
				"node %q already has a live tunnel (from %s since %s): a second tunnel for the same node is refused; stop the other kubelet, or revoke its certificate (tugctl certificate revoke --node %s)",
				node, old.from, old.since.UTC().Format(time.RFC3339), node)
		}
		r.mu.Lock()
		if r.nodes[node] == old {
			r.log.Warn("replacing a node tunnel that no longer answers", "node", node, "old", old.from, "new", e.from)
			old.cancel(errors.New("replaced: the tunnel no longer answered"))
			r.nodes[node] = e
			r.mu.Unlock()
			return nil
		}
		r.mu.Unlock() // it changed meanwhile: look again
	}
}

// answers reports whether the kubelet at the end of e still answers a
// call: any reply but a transport failure (an Unimplemented health check
// is a reply) within ProbeTimeout.
func (r *Registry) answers(ctx context.Context, e *entry) bool {
	timeout := r.ProbeTimeout
	if timeout <= 0 {
		timeout = 3 * time.Second
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := e.conn.Invoke(pctx, "/grpc.health.v1.Health/Check", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{}, grpc.WaitForReady(true))
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return false
	}
	return true
}

// Disconnect closes node's tunnel, if it has one (its certificate was
// revoked, or the node was replaced); the kubelet may connect again only
// with valid credentials.
func (r *Registry) Disconnect(node, why string) {
	r.mu.Lock()
	e := r.nodes[node]
	if e != nil {
		delete(r.nodes, node)
	}
	r.mu.Unlock()
	if e != nil {
		r.log.Warn("closing node tunnel", "node", node, "why", why)
		e.cancel(apierrors.New(apierrors.ErrUnauthenticated, "tunnel closed by the apiserver: %s", why))
	}
}

// Node returns a NodeAPI client for node, or ErrUnavailable naming the
// node if its kubelet has no tunnel open.
func (r *Registry) Node(node string) (v1.NodeAPIClient, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.nodes[node]
	if e == nil {
		return nil, apierrors.New(apierrors.ErrUnavailable, "node %q has no tunnel open: its kubelet is not running or cannot reach the apiserver (check the kubelet's log)", node)
	}
	return v1.NewNodeAPIClient(e.conn), nil
}

// Nodes lists the nodes with an open tunnel.
func (r *Registry) Nodes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.nodes))
	for n := range r.nodes {
		out = append(out, n)
	}
	return out
}
