package tunnel

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Registry is the apiserver's end: it implements NodeTunnel.Connect and
// hands out a NodeAPI client per connected node.
type Registry struct {
	v1.UnimplementedNodeTunnelServer
	log *slog.Logger
	// Authorize, if set, checks that the caller of Connect may serve node.
	Authorize func(ctx context.Context, node string) error

	mu    sync.Mutex
	nodes map[string]*entry
}

type entry struct {
	conn *grpc.ClientConn
	done chan struct{}
}

// NewRegistry makes an empty registry.
func NewRegistry(log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	return &Registry{log: log, nodes: map[string]*entry{}}
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
			return err
		}
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	conn := newStreamConn(
		func(b []byte) error { return stream.Send(&v1.TunnelFrame{Data: b}) },
		func() ([]byte, error) {
			f, err := stream.Recv()
			if err != nil {
				return nil, err
			}
			return f.Data, nil
		},
		cancel,
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
	e := &entry{conn: cc, done: make(chan struct{})}
	r.mu.Lock()
	if old := r.nodes[node]; old != nil {
		old.conn.Close()
	}
	r.nodes[node] = e
	r.mu.Unlock()
	cc.Connect()
	r.log.Info("node tunnel connected", "node", node)
	<-ctx.Done()
	r.mu.Lock()
	if r.nodes[node] == e {
		delete(r.nodes, node)
	}
	r.mu.Unlock()
	cc.Close()
	conn.Close()
	r.log.Info("node tunnel closed", "node", node)
	return nil
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
