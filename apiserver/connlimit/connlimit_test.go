package connlimit

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/api/wait"
)

// serve accepts on a limited loopback listener and keeps every accepted
// connection open until it is returned on the channel's receiver side.
func serve(t *testing.T, l *Limiter) (addr string, accepted chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := l.Listen("test", ln)
	t.Cleanup(func() { lim.Close() })
	accepted = make(chan net.Conn, 100)
	go func() {
		for {
			c, err := lim.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return ln.Addr().String(), accepted
}

// dialFrom connects from a loopback source address; nil if the dial
// itself was reset (a refused connection can be, before connect returns).
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Logf("dial from %s: %v", src, err)
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// refused says whether the server reset c: a read returns at once.
func refused(c net.Conn) bool {
	if c == nil {
		return true
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return err != nil
}

func TestLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	l := New(Config{MaxConns: 3, MaxConnsPerHost: 2}, reg, nil)
	addr, accepted := serve(t, l)
	a1, a2 := dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)
	if a1 == nil || a2 == nil {
		t.Fatal("admitted connections failed to dial")
	}
	first := <-accepted
	<-accepted
	// A third from the same host is over its per-host cap; another host
	// still gets in, up to the total.
	if a3 := dialFrom(t, "127.0.0.2", addr); !refused(a3) {
		t.Error("third connection from 127.0.0.2 was not refused")
	}
	b1 := dialFrom(t, "127.0.0.3", addr)
	<-accepted
	if b2 := dialFrom(t, "127.0.0.4", addr); !refused(b2) {
		t.Error("fourth connection in all was not refused")
	}
	for _, c := range []net.Conn{a1, a2, b1} {
		if refused(c) {
			t.Errorf("an admitted connection %s was closed", c.LocalAddr())
		}
	}
	if got := l.Open(); got != 3 {
		t.Errorf("open = %d, want 3", got)
	}
	// Closing an admitted connection (twice: counted once) frees its slot.
	first.Close()
	first.Close()
	wait.Eventually(t, 30*time.Second, "the slot freed", func() error {
		if n := l.Open(); n != 2 {
			return fmt.Errorf("%d open", n)
		}
		return nil
	})
	if dialFrom(t, "127.0.0.2", addr) == nil {
		t.Fatal("no slot after a close")
	}
	<-accepted
	want := map[string]float64{ReasonPerHost: 1, ReasonMaxConns: 1}
	for reason, n := range want {
		if got := sample(t, reg, "tugboat_apiserver_connections_refused_total", map[string]string{"listener": "test", "reason": reason}); got != n {
			t.Errorf("refused{reason=%s} = %v, want %v", reason, got, n)
		}
	}
	if got := sample(t, reg, "tugboat_apiserver_connections", map[string]string{"listener": "test"}); got != 3 {
		t.Errorf("connections gauge = %v, want 3", got)
	}
}

// sample is the value of metric name with the given label values.
func sample(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue metric
				}
			}
			return m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return 0
}

// TestHandshakeDeadline: a connection that never starts TLS is closed by
// the server once HandshakeTimeout has passed — by a gRPC server with
// GRPCOptions and an HTTPS server from HTTPServer — and its slot is freed.
func TestHandshakeDeadline(t *testing.T) {
	ca, err := pki.NewCA("test", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := pki.NewKey()
	certPEM, err := ca.IssueServer(key.Public(), []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, _ := pki.KeyPEM(key)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	for _, kind := range []string{"grpc", "https"} {
		t.Run(kind, func(t *testing.T) {
			l := New(Config{HandshakeTimeout: 300 * time.Millisecond}, nil, nil)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			lim := l.Listen(kind, ln)
			switch kind {
			case "grpc":
				srv := grpc.NewServer(append(l.GRPCOptions(), grpc.Creds(credentials.NewTLS(tlsCfg)))...)
				go func() { _ = srv.Serve(lim) }()
				defer srv.Stop()
			case "https":
				srv := l.HTTPServer(http.NotFoundHandler())
				srv.TLSConfig = tlsCfg
				go func() { _ = srv.ServeTLS(lim, "", "") }()
				defer srv.Close()
			}
			c := dialFrom(t, "127.0.0.2", ln.Addr().String())
			if c == nil {
				t.Fatal("dial failed")
			}
			start := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = c.Read(make([]byte, 1))
			if err == nil || time.Since(start) > 5*time.Second {
				t.Fatalf("idle connection still open after %s (read: %v)", time.Since(start), err)
			}
			wait.Eventually(t, 30*time.Second, "the slot freed", func() error {
				if n := l.Open(); n != 0 {
					return fmt.Errorf("%d open", n)
				}
				return nil
			})
		})
	}
}
