// Package connlimit protects a server's listeners from connection floods:
// idle connections that never start TLS, or many connections from one
// address, must not use up the process's file descriptors (at the file
// limit, accept fails for everyone and etcd's own file opens fail).
//
// A Limiter is shared by every listener of a process. Its Listen wraps a
// listener so that Accept hands out a connection only while fewer than
// MaxConns are open over all of them and fewer than MaxConnsPerHost come
// from the connection's source IP; an extra one is closed at once with a
// reset (no handshake, no goroutine, no buffer) and counted. A connection
// counts until it is closed.
//
// The handshake deadline belongs to the server, which alone knows when the
// handshake is done: a gRPC server gets it from GRPCOptions
// (grpc.ConnectionTimeout: TLS and the HTTP/2 preface), an HTTP server from
// HTTPServer (ReadHeaderTimeout, which net/http also applies to the TLS
// handshake). A connection that has not finished its handshake by then is
// closed, and its slot freed.
package connlimit

import (
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// Config sets the limits. The zero value of a field means no limit.
type Config struct {
	// MaxConns caps the connections open at once over all listeners.
	MaxConns int
	// MaxConnsPerHost caps the connections open at once from one source
	// IP address.
	MaxConnsPerHost int
	// HandshakeTimeout bounds the time from accept to a finished handshake
	// (TLS, and for gRPC the HTTP/2 preface).
	HandshakeTimeout time.Duration
	// IdleTimeout closes an HTTP keep-alive connection idle this long
	// (HTTPServer; default 2 minutes).
	IdleTimeout time.Duration
}

// Limiter counts the open connections of its listeners.
type Limiter struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	mu      sync.Mutex
	total   int
	perHost map[string]int
	// refused since the last log line, by reason; lastLog rate-limits
	// the "refusing connections" line to one per logEvery.
	refused map[string]int
	lastLog time.Time
}

const logEvery = 10 * time.Second

// Refusal reasons (the metric's reason label).
const (
	ReasonMaxConns = "max-connections"
	ReasonPerHost  = "max-connections-per-host"
)

// New returns a limiter; reg, if not nil, gets its metrics.
func New(cfg Config, reg prometheus.Registerer, log *slog.Logger) *Limiter {
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if log == nil {
		log = slog.Default()
	}
	return &Limiter{cfg: cfg, log: log, metrics: newMetrics(reg), perHost: map[string]int{}, refused: map[string]int{}}
}

// Config is the limiter's configuration.
func (l *Limiter) Config() Config { return l.cfg }

// Listen wraps ln; name labels its metrics ("grpc", "metrics", ...).
func (l *Limiter) Listen(name string, ln net.Listener) net.Listener {
	return &listener{Listener: ln, l: l, name: name}
}

// GRPCOptions are the server options that apply the handshake deadline.
func (l *Limiter) GRPCOptions() []grpc.ServerOption {
	if l.cfg.HandshakeTimeout <= 0 {
		return nil
	}
	return []grpc.ServerOption{grpc.ConnectionTimeout(l.cfg.HandshakeTimeout)}
}

// HTTPServer is an http.Server for h with the handshake deadline (for the
// TLS handshake and each request's headers) and the idle timeout; serve it
// on a listener from Listen.
func (l *Limiter) HTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: l.cfg.HandshakeTimeout, IdleTimeout: l.cfg.IdleTimeout}
}

// Open is the number of connections open now (for tests and logs).
func (l *Limiter) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// admit takes a slot for a connection from host, or says why not.
func (l *Limiter) admit(host string) (reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.cfg.MaxConns > 0 && l.total >= l.cfg.MaxConns:
		return ReasonMaxConns
	case l.cfg.MaxConnsPerHost > 0 && l.perHost[host] >= l.cfg.MaxConnsPerHost:
		return ReasonPerHost
	}
	l.total++
	l.perHost[host]++
	return ""
}

func (l *Limiter) release(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perHost[host]--; l.perHost[host] <= 0 {
		delete(l.perHost, host)
	}
}

// refusedOne counts a refusal and logs, at most once per logEvery, how
// many were refused and why.
func (l *Limiter) refusedOne(name, reason, host string) {
	l.metrics.refused(name, reason)
	l.mu.Lock()
	l.refused[reason]++
	now := time.Now()
	if now.Sub(l.lastLog) < logEvery {
		l.mu.Unlock()
		return
	}
	counts := l.refused
	l.refused, l.lastLog = map[string]int{}, now
	open, hostOpen := l.total, l.perHost[host]
	l.mu.Unlock()
	var refused []any
	for _, r := range []string{ReasonMaxConns, ReasonPerHost} {
		if counts[r] > 0 {
			refused = append(refused, slog.Int(r, counts[r]))
		}
	}
	l.log.Warn("refusing connections over the limits", "listener", name, "lastFrom", host,
		slog.Group("refused", refused...), "open", open, "openFromThatHost", hostOpen,
		"maxConnections", l.cfg.MaxConns, "maxConnectionsPerHost", l.cfg.MaxConnsPerHost)
}

type listener struct {
	net.Listener
	l    *Limiter
	name string
}

// Accept returns the next connection within the limits; the ones over
// them are reset and closed here.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := sourceHost(c.RemoteAddr())
		if reason := ln.l.admit(host); reason != "" {
			reset(c)
			ln.l.refusedOne(ln.name, reason, host)
			continue
		}
		ln.l.metrics.open(ln.name, 1)
		return &conn{Conn: c, release: func() { ln.l.release(host); ln.l.metrics.open(ln.name, -1) }}, nil
	}
}

// reset closes c with an RST rather than a FIN handshake, so the refused
// connection leaves nothing behind (no TIME_WAIT on this side).
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// sourceHost is the IP of addr (the whole address for non-IP listeners,
// which then count as one host each).
func sourceHost(addr net.Addr) string {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.String()
	case nil:
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// conn releases its slot on the first Close.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
