package kubeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/warning"
)

// Backend is the apiserver as the HTTP door uses it. Its error contract is
// the gRPC services': errors wrap apierrors sentinels.
type Backend interface {
	// Authenticate identifies the caller of r as the gRPC door identifies a
	// call's (a verified client certificate, else a bearer token) and
	// returns a context carrying the user. No credentials, or bad ones:
	// ErrUnauthenticated. With authentication off it returns ctx as is.
	Authenticate(ctx context.Context, r *http.Request) (context.Context, error)
	// Call runs handler h of gRPC method (the full name,
	// "/tugboat.api.v1.Objects/Create") for req as the gRPC server runs it
	// once the caller is authenticated: the audit log records it.
	Call(ctx context.Context, method string, req any, h func(ctx context.Context) (any, error)) (any, error)
	// Objects and Nodes are the gRPC services' handlers: every object verb,
	// and the NodeAPI relay to kubelets (logs, exec, port-forward).
	Objects() v1.ObjectsServer
	Nodes() v1.NodeAPIServer
	// Auth is the gRPC Auth service (access reviews, who am I).
	Auth() v1.AuthServer
	// Cluster is the gRPC Cluster service (componentstatuses).
	Cluster() v1.ClusterServer
	// Ready reports whether the apiserver can serve (etcd answers).
	Ready(ctx context.Context) error
}

// Config configures the handler.
type Config struct {
	Backend Backend
	Logger  *slog.Logger
	// Version is what /version reports as gitVersion (default
	// "v1.32.0-tugboat": the Kubernetes API release whose shapes are served).
	Version string
}

// Handler serves the Kubernetes API.
type Handler struct {
	cfg     Config
	b       Backend
	log     *slog.Logger
	reg     *registry
	openapi *openAPIDocs
	metrics *metrics
}

// New makes the handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "v1.32.0-tugboat"
	}
	h := &Handler{cfg: cfg, b: cfg.Backend, log: cfg.Logger.With("component", "kubeapi"), reg: newRegistry()}
	h.openapi = newOpenAPIDocs(h.reg, cfg.Version)
	return h
}

// publicPaths are served without credentials, as Kubernetes'
// system:public-info-viewer role allows.
func publicPath(p string) bool {
	switch p {
	case "/healthz", "/livez", "/readyz", "/version":
		return true
	}
	return false
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	defer func() { h.observe(r, rw.code, start) }()
	path := strings.TrimSuffix(r.URL.Path, "/")
	if path == "" {
		path = "/"
	}
	ctx := r.Context()
	if !publicPath(path) {
		var err error
		ctx, err = h.b.Authenticate(ctx, r)
		if err != nil {
			writeStatus(rw, statusOf(err, target{}))
			return
		}
	}
	ctx, rw.warnings = warning.NewContext(ctx)
	r = r.WithContext(ctx)
	switch {
	case path == "/healthz" || path == "/livez":
		writeText(rw, http.StatusOK, "ok")
	case path == "/readyz":
		if err := h.b.Ready(ctx); err != nil {
			writeText(rw, http.StatusServiceUnavailable, "etcd: "+err.Error())
			return
		}
		writeText(rw, http.StatusOK, "ok")
	case path == "/version":
		h.version(rw)
	case path == "/api" || path == "/apis" || path == "/api/v1" || strings.HasPrefix(path, "/apis/") && strings.Count(path, "/") <= 3:
		h.discovery(rw, r, path)
	case path == "/openapi/v2" || strings.HasPrefix(path, "/openapi/v3"):
		h.serveOpenAPI(rw, r, path)
	case h.review(rw, r, path), h.metricsAPI(rw, r, path), h.oidc(rw, r, path), h.componentStatuses(rw, r, path):
	case strings.HasPrefix(path, "/api/v1/") || strings.HasPrefix(path, "/apis/"):
		h.resource(rw, r, path)
	default:
		writeStatus(rw, notFound("the server could not find the requested resource"))
	}
}

// statusWriter remembers the response code for metrics and logs; it
// forwards Flush and Hijack (watch streams and upgrades need them).
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
	// warnings are admission's, sent as Warning headers (kubectl prints
	// them) before the response starts.
	warnings *warning.Recorder
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
		s.addWarnings()
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if !s.wrote {
		s.addWarnings()
	}
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// addWarnings writes RFC 7234 warn-code 299 headers, as kube-apiserver.
func (s *statusWriter) addWarnings() {
	for _, w := range s.warnings.Warnings() {
		s.Header().Add("Warning", "299 - "+strconv.Quote(w))
	}
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack hands the connection to an upgrade (WebSocket, SPDY).
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	s.code, s.wrote = http.StatusSwitchingProtocols, true
	return http.NewResponseController(s.ResponseWriter).Hijack()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeStatus(w, statusOf(err, target{}))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeStatus(w http.ResponseWriter, st *Status) { writeJSON(w, st.Code, st) }

func writeText(w http.ResponseWriter, code int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(s))
}

func notFound(msg string) *Status {
	return &Status{Kind: "Status", APIVersion: "v1", Status: "Failure", Message: msg, Reason: "NotFound", Code: http.StatusNotFound}
}

func (h *Handler) version(w http.ResponseWriter) {
	major, minor := "1", "32"
	if v := strings.TrimPrefix(h.cfg.Version, "v"); strings.Count(v, ".") >= 1 {
		parts := strings.SplitN(v, ".", 3)
		major, minor = parts[0], parts[1]
	}
	writeJSON(w, http.StatusOK, map[string]string{
		"major": major, "minor": minor, "gitVersion": h.cfg.Version, "gitCommit": "", "gitTreeState": "clean",
		"buildDate": "", "goVersion": goVersion(), "compiler": "gc", "platform": platform(),
	})
}

// clone copies an object before it is changed.
func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }
