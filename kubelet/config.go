package kubelet

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/join"
	"github.com/tugboat/tugboat/internal/containerdconfig"
	"github.com/tugboat/tugboat/kubelet/eviction"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/nodestatus"
	"github.com/tugboat/tugboat/kubelet/pod"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
)

// Version is the kubelet's version, reported in the Node's nodeInfo.
const Version = "v0.1.0"

// Defaults for Config (and the flags of cmd/kubelet).
const (
	DefaultRootDir       = "/var/lib/tugboat/kubelet"
	DefaultMetricsListen = "127.0.0.1:10248"
	DefaultClusterDNS    = "10.96.0.10"
	DefaultCNIBinDir     = "/usr/lib/cni"
	DefaultImageFSDir    = "/var/lib/containerd"
)

// Runtime backends (--runtime).
const (
	// RuntimeCRI drives any CRI runtime at RuntimeEndpoint (the default):
	// the runtime makes the pods' network namespaces and runs CNI.
	RuntimeCRI = "cri"
	// RuntimeContainerd drives containerd natively at ContainerdSocket,
	// with the kubelet making network namespaces and running CNI.
	RuntimeContainerd = "containerd"
	// RuntimeHollow simulates the node (kubelet/runtime/hollow): pods
	// start at once, get addresses from the pod CIDR, run nothing; no
	// runtime daemon, CNI, network namespaces or cgroups. For hollow
	// nodes (kubelet/hollow), many to a process.
	RuntimeHollow = "hollow"
)

// Config is the kubelet's configuration; every field has a flag in
// cmd/kubelet (named in Validate's errors).
type Config struct {
	// Client says how to reach the apiserver.
	Client client.Config
	// Join, if set, is how the kubelet gets and keeps its client
	// certificate: a join token spent once on a certificate kept in
	// Join.Dir, renewed before it expires (api/join). Client.TLS is then
	// built from it. Nil: Client carries static credentials.
	Join *join.Config
	// NodeName is this node's name (--node-name; default: the hostname).
	NodeName string
	// NodeIP is the InternalIP (--node-ip; default: the address of the
	// default route's interface).
	NodeIP string
	// NodeLabels are added to the Node (--node-labels k=v,...).
	NodeLabels map[string]string
	// RootDir holds pods (etc files, volumes, logs), network namespaces,
	// CNI state and the image import folder (--root-dir).
	RootDir string

	// Runtime is the runtime backend (--runtime): RuntimeCRI (default),
	// RuntimeContainerd or RuntimeHollow.
	Runtime string
	// HollowImages are the images present on a hollow node
	// (RuntimeHollow): hollow nodes of one process share one slice.
	HollowImages []runtime.ImageStatus
	// RuntimeEndpoint is the CRI socket, unix:///path
	// (--container-runtime-endpoint, Kubernetes' flag; default
	// unix:///run/containerd/containerd.sock). Only with RuntimeCRI.
	RuntimeEndpoint string
	// SandboxImage is the pause image the runtime's config names
	// (--pod-infra-container-image): a sandbox that fails while it is
	// missing says how to import it, and a kubelet-run containerd
	// (ContainerdDir) is configured with it.
	SandboxImage string

	// ContainerdSocket is containerd's socket (--containerd-socket) for
	// the native backend (and, under CRI, image import when the endpoint
	// is containerd's).
	ContainerdSocket string
	// ContainerdDir, if set, is where the kubelet runs a containerd of its
	// own (root, state, config and socket) when the node has none: when
	// no containerd answers at ContainerdSocket, or the dir holds an
	// earlier one's state (--containerd-dir). It stops with the kubelet;
	// its containers keep running, as with any containerd restart.
	ContainerdDir string
	// ContainerdNamespace is the containerd namespace pods live in
	// (--containerd-namespace, default "tugboat").
	ContainerdNamespace string
	// CgroupRoot is the cgroup under which pods get pod<uid>
	// (--cgroup-root, default /tugboat).
	CgroupRoot string
	// RegistryInsecure are registry hosts pulled from over plain HTTP
	// (--registry-insecure host:port,...).
	RegistryInsecure []string

	// CNIBinDirs are searched for CNI plugins (--cni-bin-dir, default
	// /usr/lib/cni then /opt/cni/bin).
	CNIBinDirs []string
	// CNIConfDir holds the CNI config; the kubelet writes its default
	// there unless the operator put one (--cni-conf-dir).
	CNIConfDir string
	// PodCIDR stands in for (or overrides) Node.spec.podCIDR (--pod-cidr).
	PodCIDR string
	// ClusterCIDR is every node's pods' range (--cluster-cidr): pod
	// traffic to it is not masqueraded, so pods see each other's real
	// addresses across nodes. Empty: only the node's own pod CIDR is
	// exempt.
	ClusterCIDR string
	// ClusterDNS are the pods' nameservers (--cluster-dns), ClusterDomain
	// their DNS domain (--cluster-domain).
	ClusterDNS    []string
	ClusterDomain string

	// MaxPods, CPU and Memory set the node's capacity (--max-pods,
	// --cpu, --memory; default: the machine's).
	MaxPods int
	CPU     string
	Memory  string

	// PodStatusWriters is how many pod statuses are written to the API
	// at once (default 8); hollow nodes, thousands to a process, use fewer.
	PodStatusWriters int

	// LeaseInterval (--lease-interval) and NodeStatusInterval
	// (--node-status-interval) pace the heartbeat and status.
	LeaseInterval      time.Duration
	NodeStatusInterval time.Duration

	// Back-offs (--crash-backoff, --crash-backoff-max,
	// --image-pull-backoff, --image-pull-backoff-max).
	CrashBackoff        time.Duration
	CrashBackoffMax     time.Duration
	ImagePullBackoff    time.Duration
	ImagePullBackoffMax time.Duration

	// Container logs are rotated past LogMaxSize bytes, keeping
	// LogMaxFiles files (--container-log-max-size, --container-log-max-files).
	LogMaxSize  int64
	LogMaxFiles int

	// Registry, if set, gets the kubelet's metrics (and is what
	// MetricsListen serves); nil makes one with the Go and process
	// collectors. Hollow nodes of one process each get their own, without
	// those (they would all report the same process).
	Registry *prometheus.Registry
	// EventsRegistry, if set, gets the event recorder's metrics
	// (tugboat_events_*) instead of Registry: the hollow nodes of one
	// process share one, so the process reports their events summed.
	EventsRegistry prometheus.Registerer

	// MetricsListen serves /metrics, /healthz and /debug/pprof
	// (--metrics-listen; empty disables).
	MetricsListen string

	// EvictionHard are the hard eviction thresholds (--eviction-hard,
	// Kubernetes' syntax: memory.available<100Mi,nodefs.available<10%,
	// imagefs.available<15%; "none" disables eviction): crossing one
	// sets MemoryPressure or DiskPressure and evicts pods, best-effort
	// first. ImageFSDir is the runtime's image store, whose file system is
	// imagefs (--image-fs-dir, default containerd's /var/lib/containerd).
	EvictionHard string
	ImageFSDir   string

	Logger *slog.Logger
}

// SetDefaults fills empty fields.
func (c *Config) SetDefaults() {
	if c.RootDir == "" {
		c.RootDir = DefaultRootDir
	}
	if c.Runtime == "" {
		c.Runtime = RuntimeCRI
	}
	if c.RuntimeEndpoint == "" {
		c.RuntimeEndpoint = cri.DefaultEndpoint
	}
	if c.SandboxImage == "" {
		c.SandboxImage = containerdconfig.DefaultSandboxImage
	}
	if c.ContainerdSocket == "" {
		c.ContainerdSocket = containerd.DefaultAddress
	}
	if c.ContainerdNamespace == "" {
		c.ContainerdNamespace = containerd.DefaultNamespace
	}
	if c.CgroupRoot == "" {
		c.CgroupRoot = containerd.DefaultCgroupParent
	}
	if len(c.CNIBinDirs) == 0 {
		c.CNIBinDirs = network.DefaultBinDirs
	}
	if c.CNIConfDir == "" {
		c.CNIConfDir = network.DefaultConfDir
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = pod.DefaultClusterDomain
	}
	if c.MaxPods == 0 {
		c.MaxPods = nodestatus.DefaultMaxPods
	}
	if c.LeaseInterval == 0 {
		c.LeaseInterval = nodestatus.DefaultLeaseInterval
	}
	if c.NodeStatusInterval == 0 {
		c.NodeStatusInterval = nodestatus.DefaultStatusInterval
	}
	if c.LogMaxSize == 0 {
		c.LogMaxSize = runtime.DefaultLogMaxBytes
	}
	if c.LogMaxFiles == 0 {
		c.LogMaxFiles = runtime.DefaultLogMaxFiles
	}
	if c.EvictionHard == "" {
		c.EvictionHard = eviction.DefaultEvictionHard
	}
	if c.ImageFSDir == "" {
		c.ImageFSDir = DefaultImageFSDir
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// evictionThresholds parses EvictionHard ("none": no thresholds).
func (c Config) evictionThresholds() ([]eviction.Threshold, error) {
	if c.EvictionHard == "none" {
		return nil, nil
	}
	return eviction.ParseThresholds(c.EvictionHard)
}

// Validate names the first bad field by its flag.
func (c Config) Validate() error {
	if c.Client.Server == "" {
		return errors.New("--server: required")
	}
	return c.validateNode()
}

// validateNode is Validate but for the apiserver: what Cleanup needs.
func (c Config) validateNode() error {
	switch {
	case c.NodeName == "":
		return errors.New("--node-name: required")
	case c.NodeName != strings.ToLower(c.NodeName) || strings.ContainsAny(c.NodeName, " /_"):
		return fmt.Errorf("--node-name %q: must be a lower-case DNS name", c.NodeName)
	case c.RootDir != "" && !filepath.IsAbs(c.RootDir):
		return fmt.Errorf("--root-dir %q: must be an absolute path", c.RootDir)
	case c.CNIConfDir != "" && !filepath.IsAbs(c.CNIConfDir):
		return fmt.Errorf("--cni-conf-dir %q: must be an absolute path", c.CNIConfDir)
	case c.ContainerdDir != "" && !filepath.IsAbs(c.ContainerdDir):
		return fmt.Errorf("--containerd-dir %q: must be an absolute path", c.ContainerdDir)
	case c.Runtime != "" && c.Runtime != RuntimeCRI && c.Runtime != RuntimeContainerd && c.Runtime != RuntimeHollow:
		return fmt.Errorf("--runtime %q: must be %s, %s or %s", c.Runtime, RuntimeCRI, RuntimeContainerd, RuntimeHollow)
	case c.MaxPods < 0:
		return fmt.Errorf("--max-pods %d: must not be negative", c.MaxPods)
	case c.PodStatusWriters < 0:
		return fmt.Errorf("pod status writers %d: must not be negative", c.PodStatusWriters)
	case c.LeaseInterval < 0:
		return fmt.Errorf("--lease-interval %s: must not be negative", c.LeaseInterval)
	case c.NodeStatusInterval < 0:
		return fmt.Errorf("--node-status-interval %s: must not be negative", c.NodeStatusInterval)
	case c.CrashBackoff < 0 || c.CrashBackoffMax < 0:
		return errors.New("--crash-backoff and --crash-backoff-max: must not be negative")
	case c.CrashBackoffMax > 0 && c.CrashBackoff > c.CrashBackoffMax:
		return fmt.Errorf("--crash-backoff %s: exceeds --crash-backoff-max %s", c.CrashBackoff, c.CrashBackoffMax)
	case c.ImagePullBackoff < 0 || c.ImagePullBackoffMax < 0:
		return errors.New("--image-pull-backoff and --image-pull-backoff-max: must not be negative")
	case c.ImagePullBackoffMax > 0 && c.ImagePullBackoff > c.ImagePullBackoffMax:
		return fmt.Errorf("--image-pull-backoff %s: exceeds --image-pull-backoff-max %s", c.ImagePullBackoff, c.ImagePullBackoffMax)
	case c.LogMaxSize < 0 || c.LogMaxFiles < 0:
		return errors.New("--container-log-max-size and --container-log-max-files: must not be negative")
	}
	if _, err := c.evictionThresholds(); err != nil {
		return err
	}
	if c.RuntimeEndpoint != "" {
		if _, err := cri.SocketPath(c.RuntimeEndpoint); err != nil {
			return fmt.Errorf("--container-runtime-endpoint %w", err)
		}
	}
	if c.ImageFSDir != "" && !filepath.IsAbs(c.ImageFSDir) {
		return fmt.Errorf("--image-fs-dir %q: must be an absolute path", c.ImageFSDir)
	}
	for _, d := range c.CNIBinDirs {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("--cni-bin-dir %q: must be an absolute path", d)
		}
	}
	if c.NodeIP != "" {
		if _, err := netip.ParseAddr(c.NodeIP); err != nil {
			return fmt.Errorf("--node-ip %q: not an IP address", c.NodeIP)
		}
	}
	if c.PodCIDR != "" {
		p, err := netip.ParsePrefix(c.PodCIDR)
		if err != nil || p.Masked() != p {
			return fmt.Errorf("--pod-cidr %q: want a network prefix such as 10.244.1.0/24", c.PodCIDR)
		}
	}
	if c.ClusterCIDR != "" {
		p, err := netip.ParsePrefix(c.ClusterCIDR)
		if err != nil || p.Masked() != p || !p.Addr().Is4() {
			return fmt.Errorf("--cluster-cidr %q: want an IPv4 network prefix such as 10.244.0.0/16", c.ClusterCIDR)
		}
	}
	for _, d := range c.ClusterDNS {
		if _, err := netip.ParseAddr(d); err != nil {
			return fmt.Errorf("--cluster-dns %q: not an IP address", d)
		}
	}
	for _, h := range c.RegistryInsecure {
		if h == "" || strings.Contains(h, "/") {
			return fmt.Errorf("--registry-insecure %q: want a registry host[:port]", h)
		}
	}
	if c.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(c.MetricsListen); err != nil {
			return fmt.Errorf("--metrics-listen %q: %v", c.MetricsListen, err)
		}
	}
	return nil
}

// Paths under the root dir.
func (c Config) networkStateDir() string { return filepath.Join(c.RootDir, "network") }
func (c Config) importDir() string       { return filepath.Join(c.RootDir, "images") }

// DefaultCertDir is where a joining kubelet keeps its certificate.
func DefaultCertDir(rootDir string) string { return filepath.Join(rootDir, "pki") }
