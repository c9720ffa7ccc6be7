// Package metricsserver serves /metrics, /healthz and /debug/pprof on a
// component's HTTP port. Every binary uses it for its --metrics-listen.
package metricsserver

import (
	"context"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Serve listens on addr until ctx ends. healthz, if not nil, is called for
// /healthz and /readyz: an error answers 503 with the error's text.
func Serve(ctx context.Context, addr string, reg *prometheus.Registry, healthz func(context.Context) error) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ServeListener(ctx, lis, reg, healthz)
}

// ServeListener is Serve on an open listener.
func ServeListener(ctx context.Context, lis net.Listener, reg *prometheus.Registry, healthz func(context.Context) error) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	check := func(w http.ResponseWriter, r *http.Request) {
		if healthz != nil {
			if err := healthz(r.Context()); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok\n"))
	}
	mux.HandleFunc("/healthz", check)
	mux.HandleFunc("/readyz", check)
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/heap", pprof.Index)
	// A connection that sends no request headers within 10s, or idles 2m
	// between requests, is closed: idle connections must not pile up.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.Serve(lis)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}
