package ingress

import (
	"context"
	"fmt"
	"html"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/tugboat/tugboat/internal/netns"
)

type targetKey struct{}

// target is the endpoint a request was sent to.
type target struct {
	addr string
	be   *backend
}

// newReverseProxy is net/http's reverse proxy to the endpoint ServeHTTP
// picked: the Host header kept, X-Forwarded-For/Host/Proto set,
// hop-by-hop headers dropped and upgrades (websockets) spliced by
// httputil, responses of unknown length (streams) flushed as they come,
// the body's encoding untouched; connections to endpoints are dialled in
// the node's namespace and kept alive.
func newReverseProxy(nsFd int, m *metrics, log *slog.Logger) *httputil.ReverseProxy {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			if nsFd == 0 {
				return dialer.DialContext(ctx, network, addr)
			}
			err = netns.Do(nsFd, func() error { c, err = dialer.DialContext(ctx, network, addr); return err })
			return c, err
		},
		// Up to 512 idle keep-alive connections per endpoint (net/http's
		// default is 2: beyond two concurrent requests to one pod, every
		// request would dial a new connection and close it after).
		MaxIdleConns: 4096, MaxIdleConnsPerHost: 512, IdleConnTimeout: 90 * time.Second,
		ExpectContinueTimeout: time.Second,
		// The client's Accept-Encoding goes to the endpoint as sent, and
		// the endpoint's encoding back: without this the Transport asks
		// for gzip on a request that did not, then decompresses the
		// answer in the proxy.
		DisableCompression: true,
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			t := pr.In.Context().Value(targetKey{}).(*target)
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", t.addr
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport:  transport,
		BufferPool: &bufferPool{},
		ErrorLog:   slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			t := r.Context().Value(targetKey{}).(*target)
			m.of(t.be.namespace, t.be.name).upstreamErrors.Inc()
			log.Debug("upstream error", "ingress", t.be.ingress, "endpoint", t.addr, "err", err)
			page(w, http.StatusBadGateway, "UpstreamError", fmt.Sprintf("endpoint %s of %s failed: %v", t.addr, t.be.service, err))
		},
	}
}

// ServeHTTP routes one request by the current table. Per request it
// allocates one reqState (the status writer and the target together) and
// the context carrying it; the table, the backend and the metric series
// are looked up, not built.
func (c *Controller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &reqState{sw: statusWriter{ResponseWriter: w, code: http.StatusOK}}
	sw := &st.sw
	be := c.table.Load().Match(r.Host, r.URL.Path)
	var ns, name string
	switch {
	case be == nil:
		page(sw, http.StatusNotFound, "NoRule", fmt.Sprintf("no Ingress rule matches host %q and path %q, and there is no default backend", r.Host, r.URL.Path))
	case len(be.addrs) == 0:
		ns, name = be.namespace, be.name
		page(sw, http.StatusServiceUnavailable, be.reason, fmt.Sprintf("Ingress %s, backend %s: %s", be.ingress, be.service, be.message))
	default:
		ns, name = be.namespace, be.name
		st.target = target{addr: be.pick(), be: be}
		c.proxy.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), targetKey{}, &st.target)))
	}
	im := c.metrics.of(ns, name)
	im.request(sw.code)
	if name != "" {
		im.duration.Observe(time.Since(start).Seconds())
	}
}

// reqState is one request's: its status writer and its endpoint.
type reqState struct {
	sw     statusWriter
	target target
}

// bufferPool lends the reverse proxy its 32 KiB copy buffers (without
// one it allocates a buffer per response).
type bufferPool struct{ p sync.Pool }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[]byte); ok {
		return *v
	}
	return make([]byte, 32*1024)
}

func (b *bufferPool) Put(buf []byte) { b.p.Put(&buf) }

// page answers with the status and a short HTML page saying why (and the
// reason in a header, for scripts).
func page(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Tugboat-Ingress-Reason", reason)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	title := fmt.Sprintf("%d %s", code, http.StatusText(code))
	fmt.Fprintf(w, "<html>\n<head><title>%s</title></head>\n<body>\n<h1>%s</h1>\n<p>%s: %s</p>\n<hr><p>tugboat ingress</p>\n</body>\n</html>\n",
		title, title, reason, html.EscapeString(msg))
}

// statusWriter remembers the status code; Unwrap lets the reverse proxy
// flush and hijack through it.
type statusWriter struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wroteHeader {
		s.code, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
