// Package client is the Go client of the Tugboat API: a connection
// (Client) and a typed view of it per kind (Typed[T]) with Create, Get,
// List, Update, UpdateStatus, Delete and Watch. Errors come back wrapping
// the sentinels of package apierrors, so callers test them with errors.Is.
//
// TLS is pluggable from the start: Config.TLS nil means plaintext (for a
// loopback-only development setup); the security issue fills it in.
package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Config says how to reach the apiserver.
type Config struct {
	// Server is the apiserver's gRPC address, host:port, or several
	// apiservers' comma-separated ("a:6443,b:6443"): calls are balanced
	// over those that pass their health check (servers.go).
	Server string
	// TLS, when set, is used for the connection; nil is plaintext.
	TLS *tls.Config
	// Token, when set, is sent as a bearer token on every call.
	Token string
	// UserAgent names the component in the apiserver's logs.
	UserAgent string
	// AllowPlaintextToken consents to sending Token without TLS, which New
	// otherwise refuses; even then only to a loopback Server (a
	// development apiserver, or a TLS-terminating tunnel on this machine).
	AllowPlaintextToken bool
	// BufferSize, if positive, is the connection's read and write buffer
	// size in bytes instead of gRPC's 32 KiB each: a process holding
	// thousands of mostly idle connections (hollow nodes) sets it small.
	BufferSize int
	// Warnings, when set, gets each warning the apiserver returns with a
	// response (Pod Security's "would violate PodSecurity ..."), as
	// kubectl prints them; nil drops them.
	Warnings func(string)
}

// Client is a connection to the apiserver, safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	objects v1.ObjectsClient
}

// New dials lazily: the first call reports an unreachable server.
func New(cfg Config) (*Client, error) {
	if cfg.Server == "" {
		return nil, fmt.Errorf("client: server address is required (--server or TUGBOAT_SERVER)")
	}
	servers, err := SplitServers(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := checkTokenTransport(cfg, servers); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(512 << 20)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 20 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
	}
	if cfg.UserAgent != "" {
		opts = append(opts, grpc.WithUserAgent(cfg.UserAgent))
	}
	if cfg.BufferSize > 0 {
		opts = append(opts, grpc.WithReadBufferSize(cfg.BufferSize), grpc.WithWriteBufferSize(cfg.BufferSize))
	}
	// A failed connection says what is wrong when the two ends do not
	// speak the same (TLS, plaintext) rather than "error reading server
	// preface: EOF" (transport.go).
	tr := &transportHint{servers: servers, tls: cfg.TLS != nil}
	opts = append(opts, grpc.WithChainUnaryInterceptor(tr.unary), grpc.WithChainStreamInterceptor(tr.stream))
	if cfg.Warnings != nil {
		opts = append(opts, grpc.WithChainUnaryInterceptor(warningsInterceptor(cfg.Warnings)))
	}
	if cfg.Token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: cfg.Token, secure: cfg.TLS != nil}))
	}
	target := servers[0]
	if len(servers) > 1 {
		var more []grpc.DialOption
		target, more = multiTarget(servers)
		opts = append(opts, more...)
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Client{conn: conn, objects: v1.NewObjectsClient(conn)}, nil
}

// WarningHeader is the gRPC response header whose values are the
// apiserver's warnings.
const WarningHeader = "warning"

// warningsInterceptor hands every warning of a unary response (refused or
// not) to f.
func warningsInterceptor(f func(string)) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var md metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&md))...)
		for _, w := range md.Get(WarningHeader) {
			f(w)
		}
		return err
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Conn is the underlying connection, for the other services (logs, exec).
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Bind assigns a pod to a node. It fails with ErrConflict if the pod is
// already bound.
func (c *Client) Bind(ctx context.Context, ns, name, node string, rv int64) (*v1.Pod, error) {
	a, err := c.objects.Bind(ctx, &v1.BindRequest{Namespace: ns, Name: name, NodeName: node, ResourceVersion: rv})
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	pod := &v1.Pod{}
	if err := a.UnmarshalTo(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// Evict evicts a pod (Objects.Evict): deleted with opts as a delete would,
// after the eviction checks (disruption budgets) allow it. A refusal for
// now wraps apierrors.ErrTooManyRequests: retry later.
func (c *Client) Evict(ctx context.Context, ns, name string, opts DeleteOptions) (*v1.Pod, error) {
	a, err := c.objects.Evict(ctx, &v1.DeleteRequest{
		Kind: "Pod", Namespace: ns, Name: name,
		ResourceVersion: opts.ResourceVersion, GracePeriodSeconds: opts.GracePeriodSeconds, PropagationPolicy: opts.PropagationPolicy,
	})
	if err != nil {
		return nil, apierrors.FromGRPC(err)
	}
	pod := &v1.Pod{}
	if err := a.UnmarshalTo(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

// Objects is the raw generic service, for callers that handle Any themselves.
func (c *Client) Objects() v1.ObjectsClient { return c.objects }
