// Package console is `tugctl console`: a local web server that shows the
// cluster's two flows live — where every pod is on its way from apply to
// Running, and how traffic reaches a Service's endpoints — for people
// learning how the parts cooperate.
//
// The parts:
//
//	console.go   Config, Run: the listener, the token, the routes
//	feed.go      the live feed: one informer per kind, summaries kept
//	             current, changes coalesced per object and pushed to every
//	             page over Server-Sent Events in batches (batchInterval), so
//	             5,000 pods changing at once are a few messages, not 5,000
//	summary.go   the small JSON shapes the page draws (never a Secret's data)
//	flow.go      a pod's creation flow (the stages apply → apiserver → etcd →
//	             controllers → scheduler → kubelet → CNI → runtime → Running →
//	             status back) built from diagnose's trace, and a Service's
//	             communication flow; `tugctl trace` (service, ingress) and `tugctl describe`
//	             on demand, through packages diagnose and describe, the same
//	             code as the CLI's
//	metrics.go   the components' /metrics (where reachable) and the feed's
//	             own rates, sampled for the charts
//	demo.go      --demo: a sample workload applied, for the page to narrate
//	auth.go      the token a non-loopback listener asks for; Host and
//	             Origin checks
//	assets/      the page: plain JavaScript, SVG and CSS embedded in the
//	             binary (go:embed), with no build step
//
// Everything the console reads it reads with the user's own client, so
// RBAC applies as for the CLI: a kind the user may not list is shown as
// forbidden, with the apiserver's message, and never fetched otherwise.
package console

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/tugboat/tugboat/api/client"
)

//go:embed assets
var assets embed.FS

// Config is how the console serves.
type Config struct {
	// Listen is the address to serve on (default 127.0.0.1:8080; port 0
	// picks a free one). A non-loopback address needs a Token.
	Listen string
	// Token, when set, is asked for by the page before anything is
	// served. A non-loopback Listen without one gets a random token,
	// printed with the URL.
	Token string
	// ClusterDomain is the cluster's DNS domain, for Service names.
	ClusterDomain string
	// Metrics are the components' /metrics URLs by component name, read
	// for the charts where reachable.
	Metrics map[string]string
	// Out receives the URL line ("Console: http://...") once serving.
	Out io.Writer
	// Demo applies a sample Deployment and Service in DemoNamespace
	// (replacing an earlier demo) once serving, and the page narrates
	// their flow. DemoImage is its image (default DefaultDemoImage).
	Demo          bool
	DemoNamespace string
	DemoImage     string
	// OnServing, if set, is called with the URL once serving (--open).
	OnServing func(url string)
	Logger    *slog.Logger
}

// DefaultListen is where the console serves unless told otherwise.
const DefaultListen = "127.0.0.1:8080"

// Validate names the bad field.
func (c *Config) Validate() error {
	if _, _, err := net.SplitHostPort(cmp.Or(c.Listen, DefaultListen)); err != nil {
		return fmt.Errorf("--listen %q: %v", c.Listen, err)
	}
	for name, u := range c.Metrics {
		if name == "" || u == "" {
			return fmt.Errorf("--metrics %q=%q: want COMPONENT=URL", name, u)
		}
	}
	return nil
}

// loopback reports whether host:port listens on loopback only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Run serves the console until ctx ends.
func Run(ctx context.Context, c *client.Client, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Listen = cmp.Or(cfg.Listen, DefaultListen)
	cfg.ClusterDomain = cmp.Or(cfg.ClusterDomain, "cluster.local")
	log := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if !loopback(cfg.Listen) && cfg.Token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		cfg.Token = hex.EncodeToString(b)
		fmt.Fprintf(cfg.Out, "--listen %s is not a loopback address: the page asks for this token: %s\n", cfg.Listen, cfg.Token)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	feed := newFeed(c, log)
	go feed.run(ctx)
	met := newMetrics(cfg.Metrics, feed, log)
	go met.run(ctx)
	s := &server{client: c, cfg: cfg, feed: feed, metrics: met, log: log,
		auth: newAuth(cfg.Token, loopback(cfg.Listen))}
	srv := &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(cfg.Out, "Console: %s (as the user of your tugctl context; Ctrl-C stops it)\n", url)
	if cfg.OnServing != nil {
		cfg.OnServing(url)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if cfg.Demo {
		d, err := startDemo(ctx, c, cmp.Or(cfg.DemoNamespace, "default"), cmp.Or(cfg.DemoImage, DefaultDemoImage))
		if err != nil {
			_ = srv.Close()
			return err
		}
		s.setDemo(d)
		fmt.Fprintf(cfg.Out, "Demo: deployment/%s and service/%s applied in namespace %s; the cluster view narrates their flow\n", d.Deployment, d.Service, d.Namespace)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	err = srv.Shutdown(sctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = srv.Close() // open event streams end with the process
	}
	return err
}

// server is the console's HTTP side.
type server struct {
	client  *client.Client
	cfg     Config
	feed    *feed
	metrics *metrics
	auth    *auth
	log     *slog.Logger

	mu   sync.Mutex
	demo *demo
}

func (s *server) setDemo(d *demo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.demo = d
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("POST /api/login", s.auth.login)
	mux.HandleFunc("GET /api/feed", s.serveFeed)
	mux.HandleFunc("GET /api/flow/pod/{ns}/{name}", s.servePodFlow)
	mux.HandleFunc("GET /api/flow/service/{ns}/{name}", s.serveServiceFlow)
	mux.HandleFunc("GET /api/trace/service/{ns}/{name}", s.serveServiceTrace)
	mux.HandleFunc("GET /api/trace/ingress/{ns}/{name}", s.serveIngressTrace)
	mux.HandleFunc("GET /api/describe/{kind}/{ns}/{name}", s.serveDescribe)
	mux.HandleFunc("GET /api/metrics", s.metrics.serve)
	mux.HandleFunc("GET /api/demo", s.serveDemo)
	return s.auth.wrap(mux)
}
