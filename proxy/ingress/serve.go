package ingress

import (
	"cmp"
	"context"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"time"

	"github.com/tugboat/tugboat/internal/netns"
)

// newTransport is the client side of every backend's reverse proxy:
// connections to endpoints are dialled in the node's namespace and kept
// alive, HTTP/1.1 (an http:// endpoint never gets HTTP/2 from a Transport
// with its own DialContext).
func newTransport(nsFd int) *http.Transport {
	dialer := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
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
}

// reverseProxy is net/http's reverse proxy to be's endpoints, round
// robin: the Host header kept, X-Forwarded-For/Host/Proto set,
// hop-by-hop headers dropped and upgrades (websockets) spliced by
// httputil, responses of unknown length (streams) flushed as they come,
// the body's encoding untouched. One per backend, made when the table is
// built, so a request carries no state of its own to it (no context
// value, no copy of the request): its endpoint is picked in Rewrite and
// read back from the outgoing URL when it fails.
func (c *Controller) reverseProxy(be *backend) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", be.pick()
			pr.SetXForwarded()
			pr.Out.Host = pr.In.Host
		},
		Transport:  c.transport,
		BufferPool: c.buffers,
		ErrorLog:   c.proxyLog,
		// r is the outgoing request (its URL the endpoint) when the
		// round trip failed, the incoming one (no endpoint yet) when the
		// request was refused before it.
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			be.metrics.upstreamErrors.Inc()
			addr := cmp.Or(r.URL.Host, "(none picked)")
			c.log.Debug("upstream error", "ingress", be.ingress, "endpoint", addr, "err", err)
			page(w, http.StatusBadGateway, "UpstreamError", fmt.Sprintf("endpoint %s of %s failed: %v", addr, be.service, err))
		},
	}
}

// wire gives every backend of t its metric series and, when it has
// endpoints, its reverse proxy.
func (c *Controller) wire(t *Table) {
	for _, be := range t.backends() {
		be.metrics = c.metrics.of(be.namespace, be.name)
		if len(be.addrs) > 0 {
			be.proxy = c.reverseProxy(be)
		}
	}
}

// ServeHTTP routes one request by the current table. Per request it
// allocates the status writer only: the table, the backend, its reverse
// proxy and its metric series are looked up, not built.
func (c *Controller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	be := c.table.Load().Match(r.Host, r.URL.Path)
	switch {
	case be == nil:
		page(sw, http.StatusNotFound, "NoRule", fmt.Sprintf("no Ingress rule matches host %q and path %q, and there is no default backend", r.Host, r.URL.Path))
		c.metrics.of("", "").request(sw.code)
		return
	case len(be.addrs) == 0:
		page(sw, http.StatusServiceUnavailable, be.reason, fmt.Sprintf("Ingress %s, backend %s: %s", be.ingress, be.service, be.message))
	default:
		be.proxy.ServeHTTP(sw, r)
	}
	be.metrics.request(sw.code)
	be.metrics.duration.Observe(time.Since(start).Seconds())
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
