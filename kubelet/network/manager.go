package network

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	current "github.com/containernetworking/cni/pkg/types/100"
	"github.com/containernetworking/plugins/pkg/ip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/tugboat/tugboat/internal/netns"
)

// ErrNotReady is wrapped by Status (and by SetUpPod) when the network
// cannot be set up: no config, a bad config, missing plugin binaries. The
// kubelet reports it as NetworkPluginNotReady with the error's message.
var ErrNotReady = errors.New("network plugin not ready")

// podIfName is the pod's interface, as in Kubernetes.
const podIfName = "eth0"

// PodNetwork identifies a pod's network attachment.
type PodNetwork struct {
	// ID is the CNI container ID: the pod's sandbox ID. Required.
	ID string
	// NetNSPath is the pod's network namespace (CreateNetNS). Required for
	// SetUpPod; TearDownPod works without it or after it is gone.
	NetNSPath string
	// The pod, passed to plugins as K8S_POD_* CNI_ARGS.
	Namespace string
	Name      string
	UID       string
	// PortMappings are the pod's hostPorts (portmap plugin).
	PortMappings []PortMapping
}

// PortMapping is a container port published on the node.
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"` // "tcp" (default) or "udp"
	HostIP        string `json:"hostIP,omitempty"`
}

// Manager sets pod networks up and tears them down. It is safe for
// concurrent use.
type Manager struct {
	cfg     Config
	cni     *libcni.CNIConfig
	logger  *slog.Logger
	metrics *metrics
}

// New returns a Manager. It registers its metrics with reg (if not nil) and
// creates the state directory; it writes no config (EnsureConfig does).
func New(cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Manager, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for _, d := range []string{cfg.cacheDir(), cfg.IPAMDataDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("network state dir: %w", err)
		}
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("network metrics: %w", err)
	}
	return &Manager{
		cfg:     cfg,
		cni:     libcni.NewCNIConfigWithCacheDir(cfg.BinDirs, cfg.cacheDir(), nil),
		logger:  logger.With("component", "network"),
		metrics: m,
	}, nil
}

// Config returns the manager's config, defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// CreateNetNS makes a pod network namespace named name in NetNSDir, pinned
// and with loopback up (netns.Create; netns.ErrExists if the name is
// taken).
func (m *Manager) CreateNetNS(name string) (string, error) {
	start := time.Now()
	path, err := netns.Create(m.cfg.NetNSDir, name)
	m.metrics.netnsDuration.WithLabelValues("create").Observe(time.Since(start).Seconds())
	return path, err
}

// DeleteNetNS removes a pod network namespace; idempotent. Call it after
// TearDownPod.
func (m *Manager) DeleteNetNS(path string) error {
	start := time.Now()
	err := netns.Remove(path)
	m.metrics.netnsDuration.WithLabelValues("delete").Observe(time.Since(start).Seconds())
	return err
}

// Status says whether pods can get a network: nil, or an error wrapping
// ErrNotReady that names what is missing (no config in ConfDir, a config
// that does not parse, plugin binaries not in BinDirs or not runnable).
func (m *Manager) Status(ctx context.Context) (err error) {
	start := time.Now()
	defer func() { m.metrics.observeCNI("status", start, err) }()
	list, file, err := m.loadNetwork()
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range list.Plugins {
		if _, err := m.cni.GetVersionInfo(ctx, p.Network.Type); err != nil {
			missing = append(missing, p.Network.Type)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("CNI config %s: plugin(s) %s not found or not runnable in %s: %w",
			file, strings.Join(missing, ", "), strings.Join(m.cfg.BinDirs, ":"), ErrNotReady)
	}
	if _, err := m.cni.ValidateNetworkList(ctx, list); err != nil {
		return fmt.Errorf("CNI config %s: %v: %w", file, err, ErrNotReady)
	}
	return nil
}

// SetUpPod runs CNI ADD for the pod on its network namespace and returns
// the pod's IPv4 address (or the first address if it has none). On failure
// it runs DEL to release what was allocated.
func (m *Manager) SetUpPod(ctx context.Context, pod PodNetwork) (netip.Addr, error) {
	if pod.ID == "" || pod.NetNSPath == "" {
		return netip.Addr{}, fmt.Errorf("set up pod network: ID and NetNSPath are required")
	}
	list, file, err := m.loadNetwork()
	if err == nil {
		list, err = m.podChain(list, file, pod)
	}
	if err != nil {
		return netip.Addr{}, fmt.Errorf("set up network of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	start := time.Now()
	res, err := m.cni.AddNetworkList(ctx, list, m.runtimeConf(pod, pod.NetNSPath))
	m.metrics.observeCNI("add", start, err)
	if err != nil {
		// A failed ADD caches nothing: DEL runs the chain ADD ran.
		if derr := m.tearDown(context.WithoutCancel(ctx), pod, list); derr != nil {
			m.logger.Warn("rolling back failed CNI ADD", "pod", pod.Namespace+"/"+pod.Name, "err", derr)
		}
		return netip.Addr{}, fmt.Errorf("CNI ADD for pod %s/%s (network %s): %w", pod.Namespace, pod.Name, list.Name, err)
	}
	addr, err := podAddr(res)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("CNI ADD for pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	m.logger.Debug("pod network up", "pod", pod.Namespace+"/"+pod.Name, "ip", addr, "took", time.Since(start))
	return addr, nil
}

// TearDownPod runs CNI DEL for the pod: with the config each attachment
// was made with (from libcni's cache) or, if nothing is cached, the
// current one. It is idempotent and works when the network namespace is
// already gone: the IP is still released, and the masquerade rules that
// older bridge plugins only remove from inside the namespace are removed
// here. Call it before DeleteNetNS.
func (m *Manager) TearDownPod(ctx context.Context, pod PodNetwork) error {
	return m.tearDown(ctx, pod, nil)
}

// tearDown is TearDownPod; with nothing cached it runs DEL with fallback,
// or, if that is nil, with the config in effect.
func (m *Manager) tearDown(ctx context.Context, pod PodNetwork, fallback *libcni.NetworkConfigList) (err error) {
	if pod.ID == "" {
		return fmt.Errorf("tear down pod network: ID is required")
	}
	start := time.Now()
	defer func() { m.metrics.observeCNI("del", start, err) }()

	nsPath := pod.NetNSPath
	if nsPath != "" && !netns.IsPinned(nsPath) {
		nsPath = "" // gone: plugins then only release their state
	}
	type attachment struct {
		list *libcni.NetworkConfigList
		rt   *libcni.RuntimeConf
	}
	var atts []attachment
	cached, err := m.cni.GetCachedAttachments(pod.ID)
	if err != nil {
		return fmt.Errorf("tear down network of pod %s/%s: CNI cache: %w", pod.Namespace, pod.Name, err)
	}
	for _, c := range cached {
		list, err := libcni.NetworkConfFromBytes(c.Config)
		if err != nil {
			m.logger.Warn("unreadable cached CNI config; using the current one", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			continue
		}
		rt := m.runtimeConf(pod, nsPath)
		rt.IfName, rt.Args, rt.CapabilityArgs = c.IfName, c.CniArgs, c.CapabilityArgs
		atts = append(atts, attachment{list, rt})
	}
	if len(atts) == 0 {
		list := fallback
		if list == nil {
			if list, _, err = m.loadNetwork(); err != nil {
				return fmt.Errorf("tear down network of pod %s/%s: %w", pod.Namespace, pod.Name, err)
			}
		}
		atts = append(atts, attachment{list, m.runtimeConf(pod, nsPath)})
	}
	var errs []error
	for _, a := range atts {
		var cached *current.Result
		if nsPath == "" {
			cached = cachedResult(m.cni, a.list, a.rt)
		}
		if err := m.cni.DelNetworkList(ctx, a.list, a.rt); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL (network %s): %w", a.list.Name, err))
			continue
		}
		if cached != nil {
			errs = append(errs, m.cleanUpAfterGoneNetNS(cached, a.list, a.rt.IfName, pod.ID))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("tear down network of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// PodIP returns the pod's address from libcni's cache of its last ADD, for
// a restarted kubelet; ok is false if nothing is cached.
func (m *Manager) PodIP(pod PodNetwork) (netip.Addr, bool) {
	cached, err := m.cni.GetCachedAttachments(pod.ID)
	if err != nil || len(cached) == 0 {
		return netip.Addr{}, false
	}
	list, err := libcni.NetworkConfFromBytes(cached[0].Config)
	if err != nil {
		return netip.Addr{}, false
	}
	rt := m.runtimeConf(pod, cached[0].NetNS)
	rt.IfName = cached[0].IfName
	res, err := m.cni.GetNetworkListCachedResult(list, rt)
	if err != nil || res == nil {
		return netip.Addr{}, false
	}
	addr, err := podAddr(res)
	return addr, err == nil
}

func (m *Manager) runtimeConf(pod PodNetwork, nsPath string) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: pod.ID,
		NetNS:       nsPath,
		IfName:      podIfName,
		Args: [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", pod.ID},
			{"K8S_POD_UID", pod.UID},
		},
	}
	if len(pod.PortMappings) > 0 {
		pms := make([]PortMapping, len(pod.PortMappings))
		for i, p := range pod.PortMappings {
			if p.Protocol == "" {
				p.Protocol = "tcp"
			}
			p.Protocol = strings.ToLower(p.Protocol)
			pms[i] = p
		}
		rt.CapabilityArgs = map[string]any{"portMappings": pms}
	}
	return rt
}

// podAddr picks the pod's address from a CNI result: the first IPv4
// address, else the first address.
func podAddr(res types.Result) (netip.Addr, error) {
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("CNI result: %w", err)
	}
	var first netip.Addr
	for _, ipc := range r.IPs {
		a, ok := netip.AddrFromSlice(ipc.Address.IP)
		if !ok {
			continue
		}
		a = a.Unmap()
		if a.Is4() {
			return a, nil
		}
		if !first.IsValid() {
			first = a
		}
	}
	if !first.IsValid() {
		return netip.Addr{}, errors.New("CNI result has no IP address")
	}
	return first, nil
}

// cachedResult returns the result of the pod's last ADD, nil if none.
func cachedResult(cni *libcni.CNIConfig, list *libcni.NetworkConfigList, rt *libcni.RuntimeConf) *current.Result {
	res, err := cni.GetNetworkListCachedResult(list, rt)
	if err != nil || res == nil {
		return nil
	}
	r, err := current.NewResultFromResult(res)
	if err != nil {
		return nil
	}
	return r
}

// cleanUpAfterGoneNetNS does what plugins skip on DEL when the pod's
// namespace is gone: bridge plugins before v1.2 remove the masquerade
// rules only from inside the namespace, and the host end of the veth
// lingers until the kernel has finished freeing the namespace (seconds
// under load). Both are removed here.
func (m *Manager) cleanUpAfterGoneNetNS(res *current.Result, list *libcni.NetworkConfigList, ifName, id string) error {
	var errs []error
	if masquerades(list) {
		var ipns []*net.IPNet
		for _, ipc := range res.IPs {
			a := ipc.Address
			ipns = append(ipns, &a)
		}
		if err := ip.TeardownIPMasqForNetworks(ipns, list.Name, ifName, id); err != nil {
			errs = append(errs, fmt.Errorf("masquerade rules of network %s: %w", list.Name, err))
		}
	}
	for _, intf := range res.Interfaces {
		if intf.Sandbox != "" {
			continue
		}
		link, err := netlink.LinkByName(intf.Name)
		if err != nil || link.Type() != "veth" {
			continue // gone already, or the bridge
		}
		if err := netlink.LinkDel(link); err != nil && !errors.Is(err, unix.ENODEV) {
			errs = append(errs, fmt.Errorf("delete host veth %s: %w", intf.Name, err))
		}
	}
	return errors.Join(errs...)
}

// masquerades reports whether a bridge plugin in list has ipMasq on.
func masquerades(list *libcni.NetworkConfigList) bool {
	for _, p := range list.Plugins {
		if p.Network.Type != "bridge" {
			continue
		}
		var c struct {
			IPMasq bool `json:"ipMasq"`
		}
		if err := json.Unmarshal(p.Bytes, &c); err == nil && c.IPMasq {
			return true
		}
	}
	return false
}
