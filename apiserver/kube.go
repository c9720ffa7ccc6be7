package apiserver

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/kubeapi"
)

// The Kubernetes HTTP API (package kubeapi) on its own port, --kube-listen
// (default 6444, beside gRPC's 6443). A port of its own rather than one
// port with ALPN: the gRPC server keeps its own HTTP/2 transport (faster
// than grpc-go's ServeHTTP mode), and each door gets its own listener
// limits. Both doors share the TLS configuration, and every HTTP request
// runs the gRPC handlers in-process through kubeBackend, so it is
// authenticated, authorized, admitted and audited as the gRPC call is.

// kubeBackend is the Server as kubeapi.Backend.
type kubeBackend struct{ s *Server }

func (b kubeBackend) Authenticate(ctx context.Context, r *http.Request) (context.Context, error) {
	p := &peer.Peer{Addr: tcpAddr(r.RemoteAddr)}
	if r.TLS != nil {
		p.AuthInfo = credentials.TLSInfo{State: *r.TLS}
	}
	ctx = peer.NewContext(ctx, p)
	md := metadata.MD{}
	if a := r.Header.Get("Authorization"); a != "" {
		md.Set("authorization", a)
	}
	if ua := r.UserAgent(); ua != "" {
		// The audit log's userAgent and the default field manager
		// (managedfields.go), as a gRPC client's.
		md.Set("user-agent", ua)
	}
	if len(md) > 0 {
		ctx = metadata.NewIncomingContext(ctx, md)
	}
	actx, err := b.s.authenticate(ctx, "")
	if err != nil {
		b.s.auditUnauthenticated(ctx, "HTTP "+r.Method+" "+r.URL.Path, nil, err)
		return nil, err
	}
	return b.s.impersonate(actx, r.Header)
}

func (b kubeBackend) Call(ctx context.Context, method string, req any, h func(ctx context.Context) (any, error)) (any, error) {
	resp, err := h(ctx)
	b.s.auditRequest(ctx, method, req, err)
	return resp, err
}

func (b kubeBackend) Objects() v1.ObjectsServer { return b.s }
func (b kubeBackend) Nodes() v1.NodeAPIServer   { return &nodeRelay{s: b.s} }
func (b kubeBackend) Ready(ctx context.Context) error {
	return b.s.healthz(ctx)
}

func tcpAddr(s string) net.Addr {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		return &net.TCPAddr{}
	}
	return a
}

// KubeAddr is the Kubernetes API listener's address ("" when off).
func (s *Server) KubeAddr() string {
	if s.kubeLis == nil {
		return ""
	}
	return s.kubeLis.Addr().String()
}

// newKubeServer makes the HTTP server of the Kubernetes API.
func (s *Server) newKubeServer() *http.Server {
	h := kubeapi.New(kubeapi.Config{Backend: kubeBackend{s}, Logger: s.log})
	h.Register(s.reg)
	// The connection limiter's handshake deadline (TLS and each request's
	// headers) and idle timeout; the listener is the limiter's too.
	srv := s.conns.HTTPServer(h)
	srv.IdleTimeout = 90 * time.Second
	// Handshake failures and the like: the server's log at debug.
	srv.ErrorLog = slog.NewLogLogger(s.log.With("door", "kubernetes").Handler(), slog.LevelDebug)
	if s.cfg.TLS != nil {
		t := s.cfg.TLS.Clone()
		t.NextProtos = []string{"h2", "http/1.1"}
		srv.TLSConfig = t
	}
	return srv
}

// serveKube serves the Kubernetes API until ctx ends.
func (s *Server) serveKube(ctx context.Context) error {
	srv := s.newKubeServer()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	}()
	var err error
	if srv.TLSConfig != nil {
		err = srv.Serve(tls.NewListener(s.kubeLis, srv.TLSConfig))
	} else {
		err = srv.Serve(s.kubeLis)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

func (b kubeBackend) Auth() v1.AuthServer { return &authService{s: b.s} }

func (b kubeBackend) Cluster() v1.ClusterServer { return &clusterService{s: b.s} }

// OpenIDConfiguration is the issuer's OpenID Connect discovery document
// (kubeapi.IssuerDiscovery), as kube-apiserver's: jwks_uri under the
// issuer.
func (b kubeBackend) OpenIDConfiguration() ([]byte, error) {
	t := b.s.saTokens
	if t == nil {
		return nil, apierrors.NotFound("", "/.well-known/openid-configuration")
	}
	return json.Marshal(map[string]any{
		"issuer":                                t.Issuer(),
		"jwks_uri":                              strings.TrimSuffix(t.Issuer(), "/") + "/openid/v1/jwks",
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": t.Algorithms(),
	})
}

// JWKS is the service-account verification keys (kubeapi.IssuerDiscovery).
func (b kubeBackend) JWKS() ([]byte, error) {
	t := b.s.saTokens
	if t == nil {
		return nil, apierrors.NotFound("", "/openid/v1/jwks")
	}
	return json.Marshal(t.JWKS())
}
