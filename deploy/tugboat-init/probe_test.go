package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte("ok"))
			return
		}
		http.Error(w, "etcd not ready", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	ctx := context.Background()
	if err := probe(ctx, srv.URL+"/healthz"); err != nil {
		t.Errorf("healthy: %v", err)
	}
	if err := probe(ctx, srv.URL+"/bad"); err == nil || !strings.Contains(err.Error(), "etcd not ready") {
		t.Errorf("unhealthy: err = %v, want the body in it", err)
	}
	if err := runProbe(ctx, nil); err == nil {
		t.Error("no URL: want a usage error")
	}
}
