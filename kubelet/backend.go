package kubelet

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/pod"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
	"github.com/tugboat/tugboat/kubelet/runtime/hollow"
)

// podNetwork is the pod network as the kubelet drives it: what the pod
// workers use (pod.Network), the node status's verdict, and its loop.
// *network.Gate is the native backend's; *criNetwork the CRI backend's.
type podNetwork interface {
	pod.Network
	Status(ctx context.Context) error
	OnChange(fn func())
	OperatorConfig() bool
	Init(ctx context.Context, podCIDR string) error
	Run(ctx context.Context) error
}

// backend is the runtime the kubelet drives (--runtime) and the pod
// network that goes with it.
type backend struct {
	// rt is the runtime itself, not instrumented: the server asks it for
	// its optional interfaces (server.Attacher, server.PortForwarder).
	rt  runtime.Runtime
	net podNetwork
	// endpoint names the runtime's socket, for logs.
	endpoint string
	close    func() error
}

// networkConfig is the kubelet's pod network configuration.
func (c Config) networkConfig(pcfg pod.Config) network.Config {
	return network.Config{
		StateDir:        c.networkStateDir(),
		ConfDir:         c.CNIConfDir,
		BinDirs:         c.CNIBinDirs,
		NetNSDir:        pcfg.NetNSDir(),
		ClusterCIDR:     c.ClusterCIDR,
		RuntimeLoopback: c.Runtime == RuntimeCRI,
	}
}

// newBackend connects to the runtime of cfg.Runtime. Neither backend
// fails when the runtime is down: Version reports it until it is up.
func newBackend(cfg Config, pcfg pod.Config, reg prometheus.Registerer, log *slog.Logger) (*backend, error) {
	if cfg.Runtime == RuntimeHollow {
		rt := hollow.New(hollow.Config{Images: cfg.HollowImages})
		return &backend{rt: rt, net: &hollowNetwork{rt: rt}, endpoint: "hollow", close: rt.Close}, nil
	}
	interval := min(5*time.Second, cfg.NodeStatusInterval)
	gate := network.NewGate(cfg.networkConfig(pcfg), reg, log, interval)
	if cfg.Runtime == RuntimeContainerd {
		ctd, err := containerd.New(containerd.Config{
			Address:             cfg.ContainerdSocket,
			Namespace:           cfg.ContainerdNamespace,
			CgroupParent:        cfg.CgroupRoot,
			PlainHTTPRegistries: cfg.RegistryInsecure,
		}, log)
		if err != nil {
			return nil, err
		}
		return &backend{rt: ctd, net: gate, endpoint: cfg.ContainerdSocket, close: ctd.Close}, nil
	}
	if len(cfg.RegistryInsecure) > 0 && cfg.ContainerdDir == "" {
		log.Warn("--registry-insecure: a CRI runtime pulls with its own registry config; make sure it lists these hosts (containerd: a hosts.toml in its registry config_path)", "hosts", cfg.RegistryInsecure)
	}
	rt, err := cri.New(cri.Config{
		Endpoint:     cfg.RuntimeEndpoint,
		CgroupParent: cfg.CgroupRoot,
		SandboxImage: cfg.SandboxImage,
	}, log)
	if err != nil {
		return nil, err
	}
	return &backend{rt: rt, net: newCRINetwork(gate, rt, interval), endpoint: cfg.RuntimeEndpoint, close: rt.Close}, nil
}
