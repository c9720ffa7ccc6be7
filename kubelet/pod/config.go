package pod

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults for Config.
const (
	DefaultCrashBackoffInitial     = 10 * time.Second
	DefaultCrashBackoffMax         = 5 * time.Minute
	DefaultImagePullBackoffInitial = 10 * time.Second
	DefaultImagePullBackoffMax     = 5 * time.Minute
	DefaultClusterDomain           = "cluster.local"
	DefaultResyncInterval          = time.Minute
	DefaultRelistInterval          = time.Second
	DefaultHousekeepingInterval    = 30 * time.Second
	// DefaultRegistryRetry is how long a registry that failed a pull is
	// not asked again for imagePullPolicy Always when the node has the
	// image (see images.go).
	DefaultRegistryRetry = time.Minute
)

// Config is what the pod workers need to know about the node.
type Config struct {
	// NodeName is this node; pods get it as spec.nodeName (fieldRef) and
	// in the image import hint. Required.
	NodeName string
	// NodeIP is the node's InternalIP, the pods' status.hostIP. Required.
	NodeIP netip.Addr
	// RootDir is the kubelet's root directory: pods live in
	// RootDir/pods/<uid> (etc files, volumes, logs), network namespaces in
	// RootDir/netns. Required, absolute.
	RootDir string
	// ImportDir is the watched image import folder, named in the hint of
	// ErrImageNeverPull (default RootDir/images).
	ImportDir string

	// ClusterDNS are the nameservers of ClusterFirst pods (10.96.0.10).
	ClusterDNS []netip.Addr
	// ClusterDomain is the cluster's DNS domain (DefaultClusterDomain).
	ClusterDomain string

	// Crash back-off: a container that keeps exiting is restarted after
	// CrashBackoffInitial, doubling up to CrashBackoffMax.
	CrashBackoffInitial time.Duration
	CrashBackoffMax     time.Duration
	// Image pull back-off, the same way.
	ImagePullBackoffInitial time.Duration
	ImagePullBackoffMax     time.Duration
	// RegistryRetry: see DefaultRegistryRetry.
	RegistryRetry time.Duration

	// ResyncInterval is how often each pod worker re-syncs without a
	// trigger (DefaultResyncInterval, Kubernetes' syncFrequency): container
	// changes (relist), probe results, spec changes, image imports and
	// back-off expiries wake workers anyway.
	ResyncInterval time.Duration
	// RelistInterval is how often the runtime is listed to notice
	// containers that changed state (DefaultRelistInterval).
	RelistInterval time.Duration
	// HousekeepingInterval is how often sandboxes, network namespaces and
	// pod directories of pods this node no longer runs are removed
	// (DefaultHousekeepingInterval).
	HousekeepingInterval time.Duration

	// MaxPods is the node's pod capacity; it sizes the status writers'
	// queue (a pod is in it at most once). Zero: 4096.
	MaxPods int
	// StatusWriters is how many pod statuses are written at once
	// (default 8).
	StatusWriters int

	// Allocatable, if set, is the node's allocatable resources now: a
	// downward API resourceFieldRef to a limit a container does not set
	// shows it, as in Kubernetes.
	Allocatable func() map[string]string

	Logger *slog.Logger
	// Registry, if set, gets the pod metrics.
	Registry prometheus.Registerer
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("pod config: nodeName: required")
	case !c.NodeIP.IsValid():
		return errors.New("pod config: nodeIP: required")
	case c.RootDir == "" || !filepath.IsAbs(c.RootDir):
		return fmt.Errorf("pod config: rootDir %q: must be an absolute path", c.RootDir)
	case c.MaxPods < 0 || c.StatusWriters < 0:
		return errors.New("pod config: maxPods and statusWriters: must not be negative")
	case c.CrashBackoffInitial < 0 || c.CrashBackoffMax < 0:
		return errors.New("pod config: crash back-off: must not be negative")
	case c.ImagePullBackoffInitial < 0 || c.ImagePullBackoffMax < 0:
		return errors.New("pod config: image pull back-off: must not be negative")
	case c.CrashBackoffMax > 0 && c.CrashBackoffInitial > c.CrashBackoffMax:
		return fmt.Errorf("pod config: crash back-off: initial %s exceeds max %s", c.CrashBackoffInitial, c.CrashBackoffMax)
	case c.ImagePullBackoffMax > 0 && c.ImagePullBackoffInitial > c.ImagePullBackoffMax:
		return fmt.Errorf("pod config: image pull back-off: initial %s exceeds max %s", c.ImagePullBackoffInitial, c.ImagePullBackoffMax)
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.ImportDir == "" {
		c.ImportDir = filepath.Join(c.RootDir, "images")
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = DefaultClusterDomain
	}
	if c.CrashBackoffInitial == 0 {
		c.CrashBackoffInitial = DefaultCrashBackoffInitial
	}
	if c.CrashBackoffMax == 0 {
		c.CrashBackoffMax = max(DefaultCrashBackoffMax, c.CrashBackoffInitial)
	}
	if c.ImagePullBackoffInitial == 0 {
		c.ImagePullBackoffInitial = DefaultImagePullBackoffInitial
	}
	if c.ImagePullBackoffMax == 0 {
		c.ImagePullBackoffMax = max(DefaultImagePullBackoffMax, c.ImagePullBackoffInitial)
	}
	if c.RegistryRetry == 0 {
		c.RegistryRetry = DefaultRegistryRetry
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = DefaultResyncInterval
	}
	if c.RelistInterval == 0 {
		c.RelistInterval = DefaultRelistInterval
	}
	if c.HousekeepingInterval == 0 {
		c.HousekeepingInterval = DefaultHousekeepingInterval
	}
	if c.MaxPods == 0 {
		c.MaxPods = 4096
	}
	if c.StatusWriters == 0 {
		c.StatusWriters = 8
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

func (c Config) allocatable() map[string]string {
	if c.Allocatable == nil {
		return nil
	}
	return c.Allocatable()
}

// Paths under the root dir.

// PodDir is where a pod's files live.
func (c Config) PodDir(uid string) string { return filepath.Join(c.RootDir, "pods", uid) }

// PodsDir holds every pod's directory.
func (c Config) PodsDir() string { return filepath.Join(c.RootDir, "pods") }

// NetNSDir is where pod network namespaces are pinned.
func (c Config) NetNSDir() string { return filepath.Join(c.RootDir, "netns") }

func (c Config) etcDir(uid string) string { return filepath.Join(c.PodDir(uid), "etc") }

// LogPath is the log file of attempt of a pod's container: output goes
// there straight from the runtime and survives kubelet restarts.
func (c Config) LogPath(uid, container string, attempt uint32) string {
	return filepath.Join(c.PodDir(uid), "containers", container, fmt.Sprintf("%d.log", attempt))
}

// EmptyDirPath is the host directory of a pod's emptyDir volume (the
// eviction manager measures it against the volume's sizeLimit).
func (c Config) EmptyDirPath(uid, volume string) string {
	return c.volumeDir(uid, "empty-dir", volume)
}

func (c Config) volumeDir(uid, kind, name string) string {
	return filepath.Join(c.PodDir(uid), "volumes", kind, name)
}

// Labels the kubelet puts on sandboxes and containers (besides the
// runtime's own pod labels).
const (
	// LabelNode names the node whose kubelet made the object.
	LabelNode = "tugboat.io/node"
	// LabelSpecImage is the image as the pod spec says it, to notice a
	// changed image.
	LabelSpecImage = "tugboat.io/spec-image"
	// LabelInit marks init containers.
	LabelInit = "tugboat.io/init-container"
)

// imageHint is the part of ErrImageNeverPull / ErrImagePull messages that
// tells the user how to get an image onto the node.
func (c Config) imageHint(image string) string {
	return fmt.Sprintf("image %s is not present on node %s: import it with `tugctl image import FILE.tar --node %s` or drop the tarball into %s/",
		image, c.NodeName, c.NodeName, c.ImportDir)
}
