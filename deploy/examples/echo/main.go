// Command echo is Tugboat's example HTTP server: it answers every request
// with the name and IP of the pod it runs in, so a Service's load balancing
// can be seen from outside. It listens on port 80 unless told otherwise
// (-port, or env PORT), serves /healthz for probes and /client (the
// caller's address as seen here), logs each request to stdout, and shuts
// down gracefully on SIGTERM.
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stdout, nil))
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
