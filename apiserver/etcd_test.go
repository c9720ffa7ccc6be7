package apiserver

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestEmbeddedEtcdPorts: a fixed port that is taken is an error; port 0
// starts (a free port picked, and picked again if another process takes it
// between picking and binding — the race itself cannot be staged here).
func TestEmbeddedEtcdPorts(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// A fixed port that is taken is not retried: the error says so.
	if e, _, err := startEmbeddedEtcd(ctx, t.TempDir(), l.Addr().String()); err == nil {
		e.Close()
		t.Fatal("started on a taken port")
	}
	e, url, err := startEmbeddedEtcd(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if url == "" {
		t.Fatal("no client URL")
	}
}
