// Package kubelet is Tugboat's node agent. Run wires its parts and runs
// them until the context ends:
//
//   - nodestatus: registers the Node, renews its Lease, reports status and
//     conditions (Ready with KubeletReady, ContainerRuntimeNotReady or
//     NetworkPluginNotReady; MemoryPressure and DiskPressure from eviction);
//   - eviction: the hard eviction thresholds (--eviction-hard); under
//     pressure it evicts pods one at a time, best-effort first; and
//     pods whose emptyDir uses more than its sizeLimit;
//   - a pod informer with the server-side field selector
//     spec.nodeName=<node>, feeding pod.Manager: one worker per pod, a
//     state machine driven through the runtime.Runtime interface: a CRI
//     runtime (kubelet/runtime/cri, --runtime cri, the default), which
//     runs CNI itself on the kubelet's conflist (cri_network.go), or
//     containerd's own API (kubelet/runtime/containerd), with the
//     kubelet running CNI (kubelet/network), or the simulation backend
//     (kubelet/runtime/hollow, --runtime hollow: no daemon, no CNI, pod
//     addresses from the pod CIDR, hollow_network.go) that hollow nodes
//     run (kubelet/hollow); probes (kubelet/prober);
//   - the NodeAPI (kubelet/server: logs, exec, image import and list,
//     stats, a probe of a Service's path from the node), served on a
//     tunnel the kubelet opens to the apiserver;
//   - the image import folder watcher (kubelet/imagedir), container log
//     rotation, and /metrics, /healthz and /debug/pprof.
//
// With --containerd-dir it runs a containerd of its own when the node has
// none (containerd_dir.go). Cleanup (`kubelet --cleanup`) removes what a
// kubelet put on the host (cleanup.go); a running kubelet holds a lock on
// its root dir, so the two never meet.
//
// The pod network is not ready until the node's pod CIDR is known
// (--pod-cidr, or Node.spec.podCIDR from the node IPAM controller) unless
// the operator supplied a CNI config; until then pods wait with
// NetworkNotReady and the Node is NotReady with NetworkPluginNotReady.
//
// Everything the kubelet knows about running pods is in the runtime (pod
// labels and annotations on containers and sandboxes) and under the root dir, so a
// restarted kubelet adopts running containers without restarting them,
// and removes what belongs to pods that are gone (CNI DEL included).
package kubelet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/informer"
	"github.com/tugboat/tugboat/api/join"
	"github.com/tugboat/tugboat/api/metricsserver"
	"github.com/tugboat/tugboat/api/record"
	"github.com/tugboat/tugboat/api/tunnel"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/eviction"
	"github.com/tugboat/tugboat/kubelet/imagedir"
	"github.com/tugboat/tugboat/kubelet/nodestatus"
	"github.com/tugboat/tugboat/kubelet/pod"
	"github.com/tugboat/tugboat/kubelet/prober"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/hollow"
	"github.com/tugboat/tugboat/kubelet/server"
	"github.com/tugboat/tugboat/kubelet/token"
)

// Run runs the kubelet until ctx ends. It returns an error only for a bad
// configuration or a setup step that cannot succeed (a root dir it cannot
// create, a metrics address in use); an unreachable apiserver or
// containerd is waited for and reported.
func Run(ctx context.Context, cfg Config) error {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	log := cfg.Logger.With("node", cfg.NodeName)
	nodeIP, err := resolveNodeIP(cfg.NodeIP)
	if err != nil {
		return err
	}
	for _, d := range []string{cfg.RootDir, cfg.importDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("--root-dir: %w", err)
		}
	}
	lock, err := lockRootDir(cfg.RootDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}

	if cfg.Client.UserAgent == "" {
		cfg.Client.UserAgent = "kubelet/" + cfg.NodeName
	}
	if cfg.Join != nil {
		if err := joinCluster(ctx, &cfg, log); err != nil {
			return err
		}
	}
	c, err := client.New(cfg.Client)
	if err != nil {
		return err
	}
	defer c.Close()

	own, err := ownContainerd(ctx, &cfg, log)
	if err != nil {
		return err
	}
	if own != nil {
		defer own.Stop()
	}
	pcfg := podConfig(cfg, nodeIP, log, reg)
	be, err := newBackend(cfg, pcfg, reg, log)
	if err != nil {
		return err
	}
	defer be.close()
	rt, err := runtime.Instrument(be.rt, reg)
	if err != nil {
		return err
	}
	net := be.net
	var evReg prometheus.Registerer = reg
	if cfg.EventsRegistry != nil {
		evReg = cfg.EventsRegistry
	}
	rec := record.New(c, "kubelet", cfg.NodeName, evReg, log)

	// Every Service, for the pods' Service environment variables.
	serviceInformer := informer.New(client.For[*v1.Service](c), informer.Options{Logger: log})
	var pods *pod.Manager
	var agent *nodestatus.Agent
	// resourceFieldRef to a limit a container does not set: the node's
	// allocatable (agent is set below, before any pod runs).
	pcfg.Allocatable = func() map[string]string { return agent.Node().GetStatus().GetAllocatable() }
	pcfgProbe := prober.Config{
		Exec: rt, Recorder: rec, Logger: log, Registry: reg,
		OnChange: func(uid string) { pods.Wake(uid) },
	}
	if cfg.Runtime == RuntimeHollow {
		pcfgProbe.NetworkProbe = hollow.NetworkProbe // no packets to addresses nobody has
	}
	probes := prober.New(pcfgProbe)
	pods, err = pod.NewManager(pcfg, pod.Deps{
		Runtime: rt, Network: net, Prober: probes, Recorder: rec,
		API: client.For[*v1.Pod](c), Sources: apiSources{c: c, services: serviceInformer, tokens: token.New(c.CreateToken, nil)},
	})
	if err != nil {
		return err
	}
	podInformer := informer.New(client.For[*v1.Pod](c), informer.Options{
		FieldSelector: "spec.nodeName=" + cfg.NodeName,
		Logger:        log,
	})
	podInformer.AddHandler(informer.Handler[*v1.Pod]{
		OnAdd:    pods.UpdatePod,
		OnUpdate: func(_, p *v1.Pod) { pods.UpdatePod(p) },
		OnDelete: pods.DeletePod,
	})

	thresholds, err := cfg.evictionThresholds()
	if err != nil {
		return err
	}
	evictions, err := eviction.New(eviction.Config{
		Thresholds: thresholds, RootDir: cfg.RootDir, ImageFSDir: cfg.ImageFSDir,
		Interval: min(eviction.DefaultInterval, cfg.NodeStatusInterval),
		Pods:     podInformer.List, MemoryUsage: podMemory(rt), Evictor: pods, EmptyDirPath: pcfg.EmptyDirPath,
		LocalStorage: podLocalStorage(rt),
		Recorder:     rec, Node: func() *v1.Node { return agent.Node() }, Registry: reg, Logger: log,
	})
	if err != nil {
		return err
	}
	agent, err = nodestatus.New(nodestatus.Config{
		NodeName:       cfg.NodeName,
		NodeIP:         nodeIP,
		Labels:         cfg.NodeLabels,
		CPU:            cfg.CPU,
		Memory:         cfg.Memory,
		MaxPods:        cfg.MaxPods,
		PodCIDR:        cfg.PodCIDR,
		LeaseInterval:  cfg.LeaseInterval,
		StatusInterval: cfg.NodeStatusInterval,
		KubeletVersion: Version,
		RootDir:        cfg.RootDir,
		Pressure:       evictions,
		Logger:         log,
		Registry:       reg,
	}, c, rt, net.Status)
	if err != nil {
		return err
	}
	net.OnChange(agent.Refresh) // the node's Ready follows the network at once

	clusterDNS := ""
	if len(cfg.ClusterDNS) > 0 {
		clusterDNS = cfg.ClusterDNS[0]
	}
	api := server.New(server.Config{NodeName: cfg.NodeName, Runtime: rt, Streams: be.rt, Pods: podInformer, OnImport: pods.WakeAll,
		ClusterDNS: clusterDNS, Logger: log})
	var serverOpts []grpc.ServerOption
	if n := cfg.Client.BufferSize; n > 0 {
		// The NodeAPI is served on the tunnel's connection: buffer it as
		// the client's.
		serverOpts = append(serverOpts, grpc.ReadBufferSize(n), grpc.WriteBufferSize(n))
	}
	grpcServer := grpc.NewServer(serverOpts...)
	api.Register(grpcServer)

	var wg sync.WaitGroup
	errc := make(chan error, 4)
	goRun := func(name string, fn func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil && ctx.Err() == nil {
				errc <- fmt.Errorf("%s: %w", name, err)
			}
		}()
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctx = runCtx

	if cfg.MetricsListen != "" {
		goRun("metrics server", func(ctx context.Context) error {
			return metricsserver.Serve(ctx, cfg.MetricsListen, reg, nil)
		})
	}
	if cfg.Join != nil {
		goRun("certificate renewal", func(ctx context.Context) error { return join.RunRenewal(ctx, c, *cfg.Join, log) })
	}
	goRun("events", func(ctx context.Context) error { rec.Run(ctx); return nil })
	goRun("node status", agent.Run)
	goRun("eviction", evictions.Run)
	goRun("probes", probes.Run)
	goRun("pod informer", podInformer.Run)
	goRun("service informer", serviceInformer.Run)
	// One tunnel to every apiserver (package tunnel says why).
	goRun("tunnel", func(ctx context.Context) error {
		return tunnel.ServeAll(ctx, cfg.Client, c, cfg.NodeName, grpcServer, log)
	})
	goRun("image import folder", (&imagedir.Watcher{
		Dir: cfg.importDir(), Importer: rt, Recorder: rec, OnImport: pods.WakeAll, Logger: log, Node: agent.Node,
	}).Run)
	goRun("log rotation", (&runtime.LogRotator{Containers: rt, MaxBytes: cfg.LogMaxSize, MaxFiles: cfg.LogMaxFiles, Logger: log}).Run)
	goRun("pod network", func(ctx context.Context) error {
		cidr := cfg.PodCIDR
		if cidr == "" && !net.OperatorConfig() {
			log.Info("waiting for the node's pod CIDR before starting pod networks")
			if cidr, err = agent.PodCIDR(ctx); err != nil {
				return nil // ctx ended
			}
		}
		if err := net.Init(ctx, cidr); err != nil {
			return err
		}
		log.Info("pod network set up", "podCIDR", cidr, "confDir", cfg.CNIConfDir)
		return net.Run(ctx)
	})
	goRun("pods", func(ctx context.Context) error {
		if !podInformer.WaitForSync(ctx) || !serviceInformer.WaitForSync(ctx) {
			return nil
		}
		log.Info("kubelet started", "ip", nodeIP, "root", cfg.RootDir, "runtime", cfg.Runtime, "endpoint", be.endpoint)
		return pods.Run(ctx)
	})

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
		log.Error("kubelet stopping", "err", runErr)
	}
	cancel()
	wg.Wait()
	grpcServer.Stop()
	return runErr
}

// joinCluster makes sure the kubelet has a client certificate, spending
// the join token if it has none (retrying while the apiserver is not
// reachable), and points the client at it.
func joinCluster(ctx context.Context, cfg *Config, log *slog.Logger) error {
	j := *cfg.Join
	j.Server, j.NodeName = cfg.Client.Server, cfg.NodeName
	if j.Dir == "" {
		j.Dir = DefaultCertDir(cfg.RootDir)
	}
	cfg.Join = &j
	backoff := time.Second
	for {
		err := join.EnsureCertificate(ctx, j)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, apierrors.ErrUnavailable) {
			return fmt.Errorf("joining the cluster: %w", err)
		}
		log.Warn("joining the cluster: apiserver unavailable; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
	t, err := join.TLSConfig(j)
	if err != nil {
		return err
	}
	cfg.Client.TLS = t
	return nil
}

func podConfig(cfg Config, nodeIP netip.Addr, log *slog.Logger, reg prometheus.Registerer) pod.Config {
	var dns []netip.Addr
	for _, d := range cfg.ClusterDNS {
		if a, err := netip.ParseAddr(d); err == nil {
			dns = append(dns, a)
		}
	}
	return pod.Config{
		NodeName:                cfg.NodeName,
		NodeIP:                  nodeIP,
		RootDir:                 cfg.RootDir,
		ImportDir:               cfg.importDir(),
		ClusterDNS:              dns,
		ClusterDomain:           cfg.ClusterDomain,
		CrashBackoffInitial:     cfg.CrashBackoff,
		CrashBackoffMax:         cfg.CrashBackoffMax,
		ImagePullBackoffInitial: cfg.ImagePullBackoff,
		ImagePullBackoffMax:     cfg.ImagePullBackoffMax,
		MaxPods:                 cfg.MaxPods,
		StatusWriters:           cfg.PodStatusWriters,
		Logger:                  log,
		Registry:                reg,
	}
}

func resolveNodeIP(flag string) (netip.Addr, error) {
	if flag != "" {
		return netip.ParseAddr(flag)
	}
	ip, err := nodestatus.DefaultNodeIP()
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--node-ip: %w", err)
	}
	return ip, nil
}

// apiSources reads ConfigMaps and Secrets straight from the API when a pod
// starts a container (and when its volumes are refreshed), and Services
// from the node's informer.
type apiSources struct {
	c        *client.Client
	services *informer.Informer[*v1.Service]
	// tokens serves serviceAccountToken projections (pod.TokenSource).
	tokens *token.Manager
}

// ServiceAccountToken implements pod.TokenSource.
func (s apiSources) ServiceAccountToken(ctx context.Context, p *v1.Pod, audience string, expirationSeconds int64) ([]byte, error) {
	return s.tokens.ServiceAccountToken(ctx, p, audience, expirationSeconds)
}

// errServicesNotRead: a container waits (CreateContainerConfigError) until
// the Services have been listed once, as in Kubernetes, so its Service
// variables are complete.
var errServicesNotRead = errors.New("services have not yet been read at least once, cannot construct envvars")

func (s apiSources) Services() ([]*v1.Service, error) {
	if !s.services.HasSynced() {
		return nil, errServicesNotRead
	}
	return s.services.List(), nil
}

func (s apiSources) ConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	return client.For[*v1.ConfigMap](s.c).Get(ctx, ns, name)
}

func (s apiSources) Secret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	return client.For[*v1.Secret](s.c).Get(ctx, ns, name)
}

// Claim returns a claim and the volume bound to it (pod.ClaimSource).
func (s apiSources) Claim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume, error) {
	pvc, err := client.For[*v1.PersistentVolumeClaim](s.c).Get(ctx, ns, name)
	if err != nil || pvc.GetSpec().GetVolumeName() == "" {
		return pvc, nil, err
	}
	pv, err := client.For[*v1.PersistentVolume](s.c).Get(ctx, "", pvc.GetSpec().GetVolumeName())
	return pvc, pv, err
}

// ParseLabels parses "k=v,k2=v2" (--node-labels).
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, errors.New("--node-labels: want key=value pairs separated by commas")
		}
		out[k] = v
	}
	return out, nil
}

// podMemory sums the memory working set of each pod's running containers,
// by pod UID, for the eviction ranking.
// podLocalStorage measures the running containers' writable layers (the
// runtime's stats) and log directories (every attempt's file and the
// rotated ones), by pod UID and container name.
func podLocalStorage(rt runtime.Runtime) func(ctx context.Context) map[string]map[string]eviction.ContainerStorage {
	return func(ctx context.Context) map[string]map[string]eviction.ContainerStorage {
		cs, err := rt.ListContainers(ctx, runtime.ContainerFilter{State: runtime.ContainerRunning})
		if err != nil {
			return nil
		}
		out := map[string]map[string]eviction.ContainerStorage{}
		for _, c := range cs {
			var u eviction.ContainerStorage
			if st, err := rt.ContainerStats(ctx, c.ID); err == nil {
				u.RootFS = int64(st.WritableLayerBytes)
			}
			if c.LogPath != "" {
				u.Logs = eviction.DiskUsage(filepath.Dir(c.LogPath))
			}
			if out[c.Pod.UID] == nil {
				out[c.Pod.UID] = map[string]eviction.ContainerStorage{}
			}
			out[c.Pod.UID][c.Name] = u
		}
		return out
	}
}

func podMemory(rt runtime.Runtime) func(ctx context.Context) map[string]int64 {
	return func(ctx context.Context) map[string]int64 {
		cs, err := rt.ListContainers(ctx, runtime.ContainerFilter{State: runtime.ContainerRunning})
		if err != nil {
			return nil
		}
		out := map[string]int64{}
		for _, c := range cs {
			if st, err := rt.ContainerStats(ctx, c.ID); err == nil {
				out[c.Pod.UID] += int64(st.MemoryWorkingSetBytes)
			}
		}
		return out
	}
}
