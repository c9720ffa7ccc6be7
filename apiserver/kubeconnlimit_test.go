package apiserver_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/apiservertest"
)

// TestKubeListenerLimited: the Kubernetes door's listener is under the
// same connection limiter as gRPC's: past --max-connections-per-host from
// one address a connection is reset at accept, an idle one is closed
// after the handshake timeout, and a client from another address keeps
// being served.
func TestKubeListenerLimited(t *testing.T) {
	s := apiservertest.StartSecure(t, apiservertest.WithKubeAPI, func(c *apiserver.Config) {
		c.MaxConnectionsPerHost, c.HandshakeTimeout = 2, 4*time.Second
	})
	attacker := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 2 * time.Second}
	dial := func() net.Conn {
		c, err := attacker.Dial("tcp", s.KubeAddr())
		if err != nil {
			return nil // reset before the dial returned: refused
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// closed reports whether the server closed c (or refused it) within d.
	closed := func(c net.Conn, d time.Duration) bool {
		if c == nil {
			return true
		}
		_ = c.SetReadDeadline(time.Now().Add(d))
		_, err := c.Read(make([]byte, 1))
		ne, ok := err.(net.Error)
		return err != nil && !(ok && ne.Timeout())
	}
	a1, a2 := dial(), dial()
	if a1 == nil || a2 == nil {
		t.Fatal("the first two connections from 127.0.0.2 were refused")
	}
	// The third is reset at accept, long before an admitted one's
	// handshake timeout.
	if a3 := dial(); !closed(a3, 2*time.Second) {
		t.Error("a third idle connection from 127.0.0.2 was not refused")
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: mustTLS(t, s, "admin")}, Timeout: 10 * time.Second}
	resp, err := hc.Get("https://" + s.KubeAddr() + "/api/v1/namespaces/default")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the admin from 127.0.0.1 during the flood: %v %v", resp, err)
	}
	resp.Body.Close()
	// The idle two never start TLS: closed after the handshake timeout.
	for _, c := range []net.Conn{a1, a2} {
		if !closed(c, 8*time.Second) {
			t.Error("an idle connection outlived the handshake timeout")
		}
	}
}
