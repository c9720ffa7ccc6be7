// Package component holds what every Tugboat binary's main shares: the
// flags that say how to reach the apiserver, the logger, the signal
// context and the leader-election identity. Mains stay thin: parse flags
// into a config, call Run(ctx, cfg), exit with its error.
package component

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/tugboat/tugboat/api/client"
)

// ClientFlags say how a component reaches the apiserver.
type ClientFlags struct {
	Server    string
	CAFile    string
	CertFile  string
	KeyFile   string
	TokenFile string
}

// Register adds --server, --ca-file, --cert-file, --key-file and --token-file.
func (f *ClientFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Server, "server", envOr("TUGBOAT_SERVER", "127.0.0.1:6443"), "apiserver gRPC address host:port, or several apiservers' comma-separated (a:6443,b:6443: calls balance over the healthy ones, watches resume on another) (env TUGBOAT_SERVER)")
	fs.StringVar(&f.CAFile, "ca-file", "", "CA bundle that signed the apiserver's certificate; enables TLS")
	fs.StringVar(&f.CertFile, "cert-file", "", "client certificate presented to the apiserver")
	fs.StringVar(&f.KeyFile, "key-file", "", "private key of --cert-file")
	fs.StringVar(&f.TokenFile, "token-file", "", "file holding a bearer token sent to the apiserver")
}

// Config turns the flags into a client config, reading the files.
func (f *ClientFlags) Config(userAgent string) (client.Config, error) {
	cfg := client.Config{Server: f.Server, UserAgent: userAgent}
	if f.Server == "" {
		return cfg, fmt.Errorf("--server: required")
	}
	if f.CAFile != "" {
		t, err := client.TLSFromFiles(f.CAFile, f.CertFile, f.KeyFile)
		if err != nil {
			return cfg, fmt.Errorf("--ca-file/--cert-file/--key-file: %w", err)
		}
		cfg.TLS = t
	} else if f.CertFile != "" {
		return cfg, fmt.Errorf("--cert-file needs --ca-file")
	}
	if f.TokenFile != "" {
		b, err := os.ReadFile(f.TokenFile)
		if err != nil {
			return cfg, fmt.Errorf("--token-file: %w", err)
		}
		cfg.Token = strings.TrimSpace(string(b))
	}
	return cfg, nil
}

// Client dials the apiserver with the flags' settings.
func (f *ClientFlags) Client(userAgent string) (*client.Client, error) {
	cfg, err := f.Config(userAgent)
	if err != nil {
		return nil, err
	}
	return client.New(cfg)
}

// LogFlags choose the log level and format.
type LogFlags struct {
	Level  string
	Format string
}

// Register adds --log-level and --log-format.
func (f *LogFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Level, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.Format, "log-format", "text", "text or json")
}

// Logger builds the slog logger, naming the component on every line.
func (f *LogFlags) Logger(component string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %v", f.Level, err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch f.Format {
	case "text":
		h = slog.NewTextHandler(os.Stderr, opts)
	case "json":
		h = slog.NewJSONHandler(os.Stderr, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", f.Format)
	}
	return slog.New(h).With("component", component), nil
}

// SignalContext is cancelled on the first SIGINT/SIGTERM; a second one
// exits the process at once (the one os.Exit outside main, by design).
func SignalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-ch
		cancel()
		<-ch
		os.Exit(1)
	}()
	return ctx, cancel
}

// Identity names this process for leader election: hostname_pid.
func Identity() string {
	h, _ := os.Hostname()
	return fmt.Sprintf("%s_%d", h, os.Getpid())
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Main runs a component's run function and exits non-zero with its error.
func Main(name string, run func(ctx context.Context) error) {
	ctx, cancel := SignalContext()
	defer cancel()
	if err := run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		cancel()
		os.Exit(1)
	}
}
