// Package apiserver is Tugboat's API server: the one generic object service
// over gRPC, and the only component that talks to etcd.
//
// A request passes: authentication and authorization (interceptors, off
// until the security issue turns them on) -> kind lookup -> defaulting ->
// validation (InvalidArgument naming the field) -> storage (etcd, CAS on the
// mod revision). Handlers return plain errors wrapping an apierrors
// sentinel; one unary and one stream interceptor map them to gRPC codes
// (errors.go). Watches are served from one watch cache per kind
// (package watchcache), never from an etcd watch per client. Background
// loops: the namespace finalizer (deleting a namespace deletes what is in
// it) and the etcd compactor.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/metricsserver"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/apiserver/auth"
	"github.com/tugboat/tugboat/apiserver/connlimit"
	"github.com/tugboat/tugboat/apiserver/flowcontrol"
	"github.com/tugboat/tugboat/apiserver/storage"
	"github.com/tugboat/tugboat/apiserver/watchcache"
)

// Server is a running apiserver.
type Server struct {
	v1.UnimplementedObjectsServer

	cfg     Config
	log     *slog.Logger
	etcd    *embed.Etcd // nil with external etcd
	etcdCli *clientv3.Client
	// identity names this apiserver's identity Lease (identitylease.go).
	identity identity
	store    *storage.Store
	caches   map[*kinds.Kind]*watchcache.Cache
	// applier holds server-side apply's field managers (apply.go).
	applier fieldManagers
	reg     *prometheus.Registry
	metrics *metrics
	// flow holds unary requests to their priority level's seats (nil
	// when off; priorityandfairness.go).
	flow   *flowcontrol.Limiter
	grpc   *grpc.Server
	health *health.Server
	lis    net.Listener
	// metricsLis serves /metrics and /healthz (nil when disabled).
	metricsLis net.Listener
	// kubeLis serves the Kubernetes HTTP API (nil when disabled).
	kubeLis net.Listener
	// conns limits the connections of every listener.
	conns    *connlimit.Limiter
	nsMu     sync.Mutex
	nsActive map[string]bool // namespaces with a finalizer running
	nsCtx    context.Context // the Run context, for namespace finalizers
	tunnels  *tunnel.Registry
	authn    *auth.Authenticator // nil: authentication off
	// saTokens issues service account tokens (nil: no key configured).
	saTokens *auth.ServiceAccountTokens
	rbac     *auth.RBAC
	// pods is the node authorizer's graph (filled by Run when
	// authentication is on).
	pods        *podGraph
	watchLimits *watchLimits
	// revoked is the revocation list (nil: authentication off).
	revoked  *revocations
	audit    *auditLog
	services *serviceAllocator
	// admission holds per-kind admission steps by Kind name.
	admission map[string][]Admitter
}

// New connects to (or starts) etcd and opens the listeners; Run serves.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger.With("component", "apiserver"), caches: map[*kinds.Kind]*watchcache.Cache{}, nsActive: map[string]bool{}, admission: map[string][]Admitter{}, pods: newPodGraph()}
	s.reg = prometheus.NewRegistry()
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	limits, err := connectionLimits(cfg, s.log)
	if err != nil {
		return nil, err
	}
	s.conns = connlimit.New(limits, s.reg, s.log)
	// Bind our ports first: a taken port fails before etcd starts.
	if err := s.listen(); err != nil {
		return nil, err
	}
	s.identity = newIdentity(s.lis.Addr().String())
	etcdLog := cfg.Logger.With("subsystem", "etcd")
	endpoints, etcdTLS := cfg.EtcdServers, cfg.EtcdTLS
	if len(endpoints) == 0 {
		e, url, err := startEmbeddedEtcd(ctx, cfg.DataDir, etcdLog)
		if err != nil {
			s.closeListeners()
			return nil, err
		}
		s.etcd = e
		endpoints, etcdTLS = []string{url}, nil
		s.log.Info("embedded etcd started", "dataDir", cfg.DataDir, "url", url)
	}
	cli, err := dialEtcd(ctx, endpoints, etcdTLS, etcdLog)
	if err != nil {
		s.closeListeners()
		s.closeEtcd()
		return nil, err
	}
	s.etcdCli = cli
	s.metrics = newMetrics(s.reg)
	if cfg.MaxRequestsInflight > 0 {
		s.flow = flowcontrol.New(cfg.MaxRequestsInflight, flowcontrol.DefaultQueueWait, s.reg)
	}
	s.store = storage.New(cli, storage.NewMetrics(s.reg), cfg.Encryption)
	s.store.SetTTLs(storage.NewTTLs(cli, map[string]time.Duration{"events": cfg.EventTTL}))
	wcm := watchcache.NewMetrics(s.reg)
	for _, k := range kinds.All() {
		s.caches[k] = watchcache.New(k, s.store, watchcache.Config{
			Size: cfg.WatchCacheSize, QueueSize: cfg.WatchQueueSize, QueueBytes: cfg.WatchQueueBytes,
			BookmarkInterval: cfg.BookmarkInterval, Index: watchIndexes[k.Name], Metrics: wcm, Logger: s.log,
		})
	}
	alloc, err := newServiceAllocator(s.store, cfg.ServiceCIDR, cfg.NodePortRange)
	if err != nil {
		s.closeListeners()
		cli.Close()
		s.closeEtcd()
		return nil, err
	}
	s.services = alloc
	s.watchLimits = newWatchLimits(cfg.MaxWatchesPerConnection, cfg.MaxWatchesPerUser)
	s.admission["Service"] = append(s.admission["Service"], alloc)
	s.admission["Node"] = append(s.admission["Node"], nodeBindingsCleaner{s.store}, nodeRestriction{})
	s.admission["PersistentVolumeClaim"] = append(s.admission["PersistentVolumeClaim"], claimAdmission{s.store}, limitRanger{s.store})
	s.admission["Ingress"] = append(s.admission["Ingress"], ingressAdmission{s.store})
	// LimitRanger first, as in Kubernetes: later steps (the quota) see the
	// defaults it sets.
	s.admission["Pod"] = append(s.admission["Pod"], limitRanger{s.store})
	// ServiceAccount before PodSecurity, as in Kubernetes (mutating before
	// validating): the policy judges the pod with its token volume.
	s.admission["Pod"] = append(s.admission["Pod"], serviceAccountAdmission{s.store})
	psa, err := newPodSecurity(s.store, cfg.PodSecurity)
	if err != nil {
		s.closeListeners()
		cli.Close()
		s.closeEtcd()
		return nil, err
	}
	psa.register(s.admission)
	s.admission["Pod"] = append(s.admission["Pod"], priorityAdmission{s.store})
	s.admission["PriorityClass"] = append(s.admission["PriorityClass"], priorityAdmission{s.store})
	err = s.setupAuth()
	if err == nil {
		err = s.setupServiceAccounts()
	}
	if err != nil {
		s.closeListeners()
		cli.Close()
		s.closeEtcd()
		return nil, err
	}
	if s.rbac != nil {
		rbacEscalation{s}.register()
		s.admission["Secret"] = append(s.admission["Secret"], tokenSecrets{})
	}
	// The quota last, as in Kubernetes: it charges what the others let in
	// and set (LimitRanger defaults).
	newQuotaAdmission(s.store).register(s.admission)
	opts := append(s.conns.GRPCOptions(),
		grpc.MaxRecvMsgSize(4<<20),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		// Outermost first: metrics see the status codes that unaryErrors
		// and streamErrors map the handlers' plain errors to (errors.go).
		grpc.ChainUnaryInterceptor(s.unaryMetrics, unaryErrors, s.unaryAuth, s.unaryFlow),
		grpc.ChainStreamInterceptor(s.streamMetrics, streamErrors, s.streamAuth),
	)
	if cfg.TLS != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	s.grpc = grpc.NewServer(opts...)
	v1.RegisterObjectsServer(s.grpc, s)
	s.tunnels = tunnel.NewRegistry(s.log)
	v1.RegisterNodeTunnelServer(s.grpc, s.tunnels)
	v1.RegisterNodeAPIServer(s.grpc, &nodeRelay{s: s})
	v1.RegisterAuthServer(s.grpc, &authService{s: s})
	v1.RegisterClusterServer(s.grpc, &clusterService{s: s})
	s.tunnels.Authorize = s.authorizeTunnel
	s.tunnels.Audit = func(ctx context.Context, node, event string, err error) {
		stage := stageComplete
		if event == "connect" && err == nil {
			stage = stageStarted
		}
		s.auditEvent(ctx, auditEntry{Stage: stage, Verb: event, Kind: "Node", Name: node, Subresource: "tunnel", Node: node}.withResult(err))
	}
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s, nil
}

// listen binds the gRPC and metrics addresses, both within the
// connection limits.
func (s *Server) listen() error {
	lis, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", s.cfg.Listen, err)
	}
	s.lis = s.conns.Listen("grpc", lis)
	if s.cfg.MetricsListen != "" {
		ml, err := net.Listen("tcp", s.cfg.MetricsListen)
		if err != nil {
			lis.Close()
			return fmt.Errorf("--metrics-listen %s: %w", s.cfg.MetricsListen, err)
		}
		s.metricsLis = s.conns.Listen("metrics", ml)
	}
	if s.cfg.KubeListen != "" {
		kl, err := net.Listen("tcp", s.cfg.KubeListen)
		if err != nil {
			s.closeListeners()
			return fmt.Errorf("--kube-listen %s: %w", s.cfg.KubeListen, err)
		}
		s.kubeLis = s.conns.Listen("kube", kl)
	}
	return nil
}

// Connections is the limiter of the server's listeners: a listener the
// server opens elsewhere (the Kubernetes HTTPS API) goes through its
// Listen and serves with its HTTPServer.
func (s *Server) Connections() *connlimit.Limiter { return s.conns }

func (s *Server) closeListeners() {
	s.lis.Close()
	if s.metricsLis != nil {
		s.metricsLis.Close()
	}
	if s.kubeLis != nil {
		s.kubeLis.Close()
	}
}

// Addr is the gRPC listener's address.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Tunnels is the registry of kubelet tunnels.
func (s *Server) Tunnels() *tunnel.Registry { return s.tunnels }

// EtcdEndpoints are the etcd client URLs the server uses (the embedded
// etcd's, unless --etcd-servers named others): for tests that look at what
// is stored at rest.
func (s *Server) EtcdEndpoints() []string { return s.etcdCli.Endpoints() }

// Registry is the server's metrics registry.
func (s *Server) Registry() *prometheus.Registry { return s.reg }

// Run serves until ctx ends, then stops gracefully and closes etcd.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range s.caches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Run(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("watch cache stopped", "err", err)
			}
		}()
	}
	// Wait for the caches so the first watch does not block.
	for k, c := range s.caches {
		select {
		case <-c.Ready():
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			s.log.Warn("watch cache not ready after 30s", "kind", k.Plural)
		}
	}
	if err := s.services.repair(ctx); err != nil {
		s.log.Warn("repairing service IP and port claims", "err", err)
	}
	// fail stops what Run started so far (the caches end with ctx).
	fail := func(err error) error {
		cancel()
		s.closeListeners()
		s.shutdown(&wg)
		return err
	}
	if err := s.bootstrap(ctx); err != nil {
		return fail(err)
	}
	if s.authn != nil {
		if err := s.bootstrapPolicy(ctx); err != nil {
			return fail(fmt.Errorf("creating the default RBAC policy: %w", err))
		}
		if err := s.followRBAC(ctx); err != nil {
			return fail(fmt.Errorf("loading RBAC: %w", err))
		}
		if err := s.followPods(ctx); err != nil {
			return fail(fmt.Errorf("loading the node authorizer's pods: %w", err))
		}
		if err := s.followRevocations(ctx); err != nil {
			return fail(fmt.Errorf("loading the certificate revocation list: %w", err))
		}
	}
	wg.Add(4)
	go func() { defer wg.Done(); s.runIdentityLease(ctx) }()
	go func() { defer wg.Done(); s.runCompactor(ctx) }()
	go func() { defer wg.Done(); s.resumeNamespaceFinalizers(ctx) }()
	go func() { defer wg.Done(); s.reencrypt(ctx) }()
	errc := make(chan error, 3)
	if s.cfg.MetricsListen != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := metricsserver.ServeListener(ctx, s.metricsLis, s.reg, s.healthz)
			if err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if s.kubeLis != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.serveKube(ctx); err != nil {
				errc <- err
			}
		}()
	}
	go func() { errc <- s.grpc.Serve(s.lis) }()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.log.Info("apiserver serving", "addr", s.Addr(), "kubeAddr", s.KubeAddr(), "tls", s.cfg.TLS != nil)
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		cancel()
	}
	s.health.Shutdown()
	stopped := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		s.grpc.Stop()
	}
	s.shutdown(&wg)
	return err
}

func (s *Server) shutdown(wg *sync.WaitGroup) {
	wg.Wait()
	if s.audit != nil {
		s.audit.Close()
	}
	s.etcdCli.Close()
	s.closeEtcd()
}

func (s *Server) closeEtcd() {
	if s.etcd != nil {
		s.etcd.Close()
		s.etcd = nil
	}
}

// healthz reports whether etcd answers.
func (s *Server) healthz(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := s.store.Revision(ctx)
	return err
}

// bootstrap creates the namespaces every cluster has.
func (s *Server) bootstrap(ctx context.Context) error {
	for _, name := range []string{"default", "kube-system", "kube-node-lease"} {
		ns := &v1.Namespace{Metadata: &v1.ObjectMeta{Name: name}}
		if _, err := s.create(ctx, ns, false); err != nil && !isAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	if _, err := s.create(ctx, defaultStorageClass(), false); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("creating the default StorageClass: %w", err)
	}
	if _, err := s.create(ctx, defaultIngressClass(), false); err != nil && !isAlreadyExists(err) {
		return fmt.Errorf("creating the default IngressClass: %w", err)
	}
	if err := s.ensureSystemPriorityClasses(ctx); err != nil {
		return err
	}
	return s.ensureDefaultServiceAccounts(ctx)
}

// reencrypt rewrites, once at start, the values at rest that are not
// encrypted the way they are written today (storage.Store.Reencrypt): after
// a key rotation or an upgrade from unbound ciphertext.
func (s *Server) reencrypt(ctx context.Context) {
	if s.cfg.Encryption == nil {
		return
	}
	res, err := s.store.Reencrypt(ctx)
	log := s.log.With("key", s.cfg.Encryption.WriteKey(), "rewritten", res.Rewritten, "conflicts", res.Conflicts)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Error("re-encrypting values at rest stopped", "err", err)
	case res.Failed > 0:
		log.Error("re-encrypting values at rest: some values cannot be decrypted", "failed", res.Failed, "keys", res.FailedKeys)
	case err == nil:
		log.Info("values at rest are encrypted with the first key")
	}
}

// runCompactor compacts etcd history every interval to the revision seen
// one interval earlier, as kube-apiserver does.
func (s *Server) runCompactor(ctx context.Context) {
	if s.cfg.CompactionInterval < 0 {
		return
	}
	t := time.NewTicker(s.cfg.CompactionInterval)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rev, err := s.store.Revision(ctx)
		if err != nil {
			continue
		}
		if last > 0 {
			if err := s.Compact(ctx, last); err != nil {
				s.log.Warn("compaction failed", "revision", last, "err", err)
			}
		}
		last = rev
	}
}

// Compact discards history before rev in etcd and in every watch cache.
func (s *Server) Compact(ctx context.Context, rev int64) error {
	if err := s.store.Compact(ctx, rev); err != nil {
		return err
	}
	for _, c := range s.caches {
		c.Compacted(rev)
	}
	s.log.Info("compacted etcd", "revision", rev)
	return nil
}
