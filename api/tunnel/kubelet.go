package tunnel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ServeAll keeps a tunnel to every apiserver of cfg (one Serve each, over
// a client of its own to that one address) until ctx ends, and serves srv
// on all of them. c is the caller's client of cfg: when cfg names a single
// apiserver, the tunnel is a stream on c's connection rather than a second
// connection to the same server (the apiserver tells a tunnel by its
// stream, not its connection). It returns when ctx ends, or at once with
// an error for a client configuration it cannot use.
func ServeAll(ctx context.Context, cfg client.Config, c *client.Client, node string, srv *grpc.Server, log *slog.Logger) error {
	each, err := cfg.EachServer()
	if err != nil {
		return err
	}
	if log == nil {
		log = slog.Default()
	}
	if len(each) == 1 && c != nil {
		return Serve(ctx, c, node, srv, log)
	}
	clients := make([]*client.Client, 0, len(each))
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	for _, ec := range each {
		c, err := client.New(ec)
		if err != nil {
			return err
		}
		clients = append(clients, c)
	}
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = Serve(ctx, c, node, srv, log.With("apiserver", each[i].Server))
		}()
	}
	wg.Wait()
	return nil
}

// Serve keeps a tunnel to the apiserver open for node and serves srv (the
// kubelet's NodeAPI server) on it, reconnecting with backoff until ctx ends.
// srv may also serve other listeners; Serve does not stop it (the caller
// does, when it is done with it).
func Serve(ctx context.Context, c *client.Client, node string, srv *grpc.Server, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	log = log.With("node", node)
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := serveOnce(ctx, c, node, srv)
		if ctx.Err() != nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			backoff = 200 * time.Millisecond
		}
		if apierrors.IsAlreadyExists(err) || errors.Is(err, apierrors.ErrUnauthenticated) || errors.Is(err, apierrors.ErrForbidden) {
			log.Warn("tunnel refused; retrying", "err", err, "in", backoff)
		} else {
			log.Debug("tunnel closed; reconnecting", "err", err, "in", backoff)
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

func serveOnce(ctx context.Context, c *client.Client, node string, srv *grpc.Server) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := v1.NewNodeTunnelClient(c.Conn()).Connect(sctx)
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	if err := stream.Send(&v1.TunnelFrame{NodeName: node}); err != nil {
		return apierrors.FromGRPC(err)
	}
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
	// One grpc.Server may serve many listeners; each tunnel is one.
	lis := newOneConnListener(conn)
	// Serve on this goroutine (none waits beside it): the end of sctx (ctx
	// ended, or the stream broke: the conn cancels it) closes the listener
	// and the connection, which ends Serve; a Serve that ends first (the
	// server stopped) cancels sctx, which closes them.
	context.AfterFunc(sctx, func() {
		lis.Close()
		conn.Close()
	})
	err = srv.Serve(lis)
	ended := sctx.Err()
	cancel()
	if err != nil && ended == nil {
		return fmt.Errorf("tunnel: %w", err)
	}
	return ended
}
