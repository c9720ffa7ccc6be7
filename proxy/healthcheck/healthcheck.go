// Package healthcheck serves the health check node ports of Services with
// externalTrafficPolicy Local, as kube-proxy does: for every LoadBalancer
// Service with externalTrafficPolicy Local and a spec.healthCheckNodePort
// (the apiserver allocates one), the node's proxy listens on that port
// (all of the node's addresses) and answers every request, whatever its
// path, with
//
//	{"service":{"namespace":"ns","name":"name"},"localEndpoints":N,"serviceProxyHealthy":true}
//
// status 200 when N ≥ 1 and the proxy is healthy, 503 otherwise, so a load
// balancer probing every node sends clients only to nodes that have an
// endpoint (the datapath drops external traffic on the others). N counts
// the local endpoints (address and port) as the datapath last programmed
// them (Config.LocalEndpoints: the nftables datapath's external chains),
// so the check never says healthy before the rule that reaches the
// endpoint is live, nor after it is gone; without it, the ready
// endpoints on this node in the Service's EndpointSlices, as kube-proxy's
// count does (terminating ones do not count). Headers as kube-proxy's: Content-Type application/json,
// X-Content-Type-Options nosniff, X-Load-Balancing-Endpoint-Weight N.
//
// Listeners follow the Services: Changed wakes Run, which opens the ports
// of new Services and closes those of Services gone or changed (the port,
// the type or the policy); the answer itself is computed per request, so
// it follows each datapath sync at once. A port that cannot
// be bound is logged and retried every RetryPeriod; the other ports are
// served meanwhile.
package healthcheck

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/internal/netns"
)

// Source is the proxy's informer caches. Objects are shared: never mutated.
type Source interface {
	// Service returns the Service of key "namespace/name".
	Service(key string) (*v1.Service, bool)
	// EndpointSlices returns the slices of the Service of key.
	EndpointSlices(key string) []*v1.EndpointSlice
	// ServiceKeys lists every Service's key.
	ServiceKeys() []string
}

// Config configures a Server.
type Config struct {
	// NodeName is the proxy's node: endpoints with this nodeName are local.
	// Required.
	NodeName string
	// Source is read on every change and request. Required.
	Source Source
	// ListenIP is the address the ports are opened on (invalid: all of the
	// node's, as kube-proxy's default).
	ListenIP netip.Addr
	// NetNS is an open file descriptor of the network namespace to listen
	// in; 0: the process's own.
	NetNS int
	// LocalEndpoints, if set, is the count of the Service key's local
	// endpoints the datapath has programmed (nftables.Datapath's); nil:
	// counted from Source's EndpointSlices.
	LocalEndpoints func(key string) int
	// Healthy reports the proxy's own health (serviceProxyHealthy); nil:
	// always healthy.
	Healthy func() bool
	// RetryPeriod is how often ports that could not be bound are tried
	// again (default 10s).
	RetryPeriod time.Duration
	Logger      *slog.Logger
}

// Server serves the health check node ports of one node.
type Server struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{}

	// Owned by Run.
	listeners map[int32]*listener // port -> its listener

	// onSync, if set (tests), is called after every sync with the number
	// of ports that could not be opened.
	onSync func(failed int)
}

type listener struct {
	key string // the Service's
	srv *http.Server
	ln  net.Listener
}

// New validates cfg and makes a Server.
func New(cfg Config) (*Server, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("healthcheck: NodeName: required")
	}
	if cfg.Source == nil {
		return nil, errors.New("healthcheck: Source: required")
	}
	if cfg.RetryPeriod <= 0 {
		cfg.RetryPeriod = 10 * time.Second
	}
	if cfg.Healthy == nil {
		cfg.Healthy = func() bool { return true }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, log: cfg.Logger.With("component", "healthcheck"), wake: make(chan struct{}, 1),
		listeners: map[int32]*listener{}}, nil
}

// Changed records that some Service changed. It never blocks.
func (s *Server) Changed() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run keeps the listeners equal to the Services until ctx ends, then
// closes them all.
func (s *Server) Run(ctx context.Context) error {
	defer func() {
		for port := range s.listeners {
			s.close(port)
		}
	}()
	retry := time.NewTicker(s.cfg.RetryPeriod)
	defer retry.Stop()
	for {
		s.sync()
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-retry.C:
		}
	}
}

// HealthCheckNodePort is the port a Service's health is served on, 0 if
// none: LoadBalancers with externalTrafficPolicy Local, as kube-proxy.
func HealthCheckNodePort(svc *v1.Service) int32 {
	spec := svc.GetSpec()
	if spec.GetType() != "LoadBalancer" || spec.GetExternalTrafficPolicy() != "Local" {
		return 0
	}
	if p := spec.GetHealthCheckNodePort(); p > 0 && p <= 65535 {
		return p
	}
	return 0
}

// sync opens and closes listeners to match the Services.
func (s *Server) sync() {
	want := map[int32]string{}
	for _, key := range s.cfg.Source.ServiceKeys() {
		svc, ok := s.cfg.Source.Service(key)
		if !ok {
			continue
		}
		if port := HealthCheckNodePort(svc); port != 0 {
			if other, dup := want[port]; dup {
				s.log.Warn("two Services claim one healthCheckNodePort; serving the first", "port", port, "service", key, "other", other)
				if key > other {
					continue
				}
			}
			want[port] = key
		}
	}
	for port, l := range s.listeners {
		if want[port] != l.key {
			s.close(port)
		}
	}
	failed := 0
	for port, key := range want {
		if _, ok := s.listeners[port]; ok {
			continue
		}
		if err := s.open(port, key); err != nil {
			failed++
			s.log.Warn("cannot serve the health check node port; retrying", "service", key, "port", port, "err", err, "retryIn", s.cfg.RetryPeriod)
		}
	}
	if s.onSync != nil {
		s.onSync(failed)
	}
}

func (s *Server) open(port int32, key string) error {
	addr := net.JoinHostPort("", strconv.Itoa(int(port)))
	if s.cfg.ListenIP.IsValid() {
		addr = net.JoinHostPort(s.cfg.ListenIP.String(), strconv.Itoa(int(port)))
	}
	var ln net.Listener
	err := netns.Do(s.cfg.NetNS, func() (err error) { ln, err = net.Listen("tcp", addr); return err })
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler(key), ReadHeaderTimeout: 10 * time.Second}
	s.listeners[port] = &listener{key: key, srv: srv, ln: ln}
	go func() { _ = srv.Serve(ln) }()
	s.log.Info("serving health check node port", "service", key, "port", port)
	return nil
}

func (s *Server) close(port int32) {
	l := s.listeners[port]
	delete(s.listeners, port)
	_ = l.srv.Close() // closes the listener and open connections
	s.log.Info("stopped serving health check node port", "service", l.key, "port", port)
}

// Status is the JSON body of an answer (kube-proxy's).
type Status struct {
	Service struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"service"`
	LocalEndpoints      int  `json:"localEndpoints"`
	ServiceProxyHealthy bool `json:"serviceProxyHealthy"`
}

func (s *Server) handler(key string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var st Status
		st.Service.Namespace, st.Service.Name, _ = strings.Cut(key, "/")
		if s.cfg.LocalEndpoints != nil {
			st.LocalEndpoints = s.cfg.LocalEndpoints(key)
		} else {
			st.LocalEndpoints = LocalReadyEndpoints(s.cfg.Source.EndpointSlices(key), s.cfg.NodeName)
		}
		st.ServiceProxyHealthy = s.cfg.Healthy()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Load-Balancing-Endpoint-Weight", strconv.Itoa(st.LocalEndpoints))
		if st.LocalEndpoints == 0 || !st.ServiceProxyHealthy {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(st)
	})
}

// LocalReadyEndpoints counts the ready endpoints (address and port) of
// slices on node: a condition left unset counts as ready.
func LocalReadyEndpoints(slices []*v1.EndpointSlice, node string) int {
	seen := map[netip.AddrPort]struct{}{}
	for _, sl := range slices {
		for _, e := range sl.GetEndpoints() {
			if e.GetNodeName() != node {
				continue
			}
			if c := e.GetConditions(); c != nil && c.Ready != nil && !c.GetReady() {
				continue
			}
			for _, a := range e.GetAddresses() {
				ip, err := netip.ParseAddr(a)
				if err != nil {
					continue
				}
				for _, p := range sl.GetPorts() {
					if p.GetPort() > 0 && p.GetPort() <= 65535 {
						seen[netip.AddrPortFrom(ip, uint16(p.GetPort()))] = struct{}{}
					}
				}
			}
		}
	}
	return len(seen)
}
