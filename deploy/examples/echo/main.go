// Command echo is Tugboat's example HTTP server: it answers every request
// with the name and IP of the pod it runs in, so a Service's load balancing
// can be seen from outside. It listens on port 80 unless told otherwise
// (-port, or env PORT), serves /healthz for probes and /client (the
// caller's address as seen here), logs each request to stdout, and shuts
// down gracefully on SIGTERM. With -grpc-port (env GRPC_PORT) it also
// serves grpc.health.v1.Health there, for gRPC probes: the server ("")
// and service "echo" are NOT_SERVING for -grpc-serving-after (env
// GRPC_SERVING_AFTER, a duration; default 0), then SERVING.
//
// The pod name comes from env POD_NAME (the Downward API) or the hostname,
// the IP from env POD_IP or the first non-loopback address; env NODE_NAME,
// if set, is added to the answer as node=NAME.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "echo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("echo", flag.ContinueOnError)
	defaultPort := os.Getenv("PORT")
	if defaultPort == "" {
		defaultPort = "80"
	}
	port := fs.String("port", defaultPort, "TCP port to listen on (env PORT)")
	grpcPort := fs.String("grpc-port", os.Getenv("GRPC_PORT"), "TCP port of the grpc.health.v1 server (env GRPC_PORT; empty: none)")
	after := fs.Duration("grpc-serving-after", 0, "how long the gRPC health server says NOT_SERVING first (env GRPC_SERVING_AFTER)")
	if v := os.Getenv("GRPC_SERVING_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("GRPC_SERVING_AFTER: %w", err)
		}
		*after = d
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, nil))
	if *grpcPort != "" {
		gs, err := serveHealth(ctx, logger, *grpcPort, *after)
		if err != nil {
			return err
		}
		defer gs.Stop()
	}
	name, ip, node := podName(), podIP(), os.Getenv("NODE_NAME")

	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	// /client answers with the address the request came from, to see
	// whether something on the way translated it (NAT).
	mux.HandleFunc("/client", func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "client=%s\n", host)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		logger.Info("request", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if node != "" {
			fmt.Fprintf(w, "pod=%s ip=%s node=%s path=%s\n", name, ip, node, r.URL.Path)
			return
		}
		fmt.Fprintf(w, "pod=%s ip=%s path=%s\n", name, ip, r.URL.Path)
	})
	srv := &http.Server{Addr: net.JoinHostPort("", *port), Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	logger.Info("listening", "addr", srv.Addr, "pod", name, "ip", ip)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func podName() string {
	if n := os.Getenv("POD_NAME"); n != "" {
		return n
	}
	n, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return n
}

func podIP() string {
	if ip := os.Getenv("POD_IP"); ip != "" {
		return ip
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "unknown"
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return "unknown"
}

// serveHealth serves grpc.health.v1.Health on port: NOT_SERVING for
// after, then SERVING, for the server ("") and service "echo".
func serveHealth(ctx context.Context, logger *slog.Logger, port string, after time.Duration) (*grpc.Server, error) {
	lis, err := net.Listen("tcp", net.JoinHostPort("", port))
	if err != nil {
		return nil, err
	}
	gs := grpc.NewServer()
	hs := health.NewServer()
	grpc_health_v1.RegisterHealthServer(gs, hs)
	set := func(st grpc_health_v1.HealthCheckResponse_ServingStatus) {
		hs.SetServingStatus("", st)
		hs.SetServingStatus("echo", st)
		logger.Info("gRPC health", "status", st.String())
	}
	set(grpc_health_v1.HealthCheckResponse_NOT_SERVING)
	go func() {
		select {
		case <-ctx.Done():
		case <-time.After(after):
			set(grpc_health_v1.HealthCheckResponse_SERVING)
		}
	}()
	go func() { _ = gs.Serve(lis) }()
	logger.Info("gRPC health listening", "addr", lis.Addr().String())
	return gs, nil
}
