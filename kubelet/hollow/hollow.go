// Package hollow runs hollow nodes: many real kubelets in one process
// (hack/hollow --nodes N), each over the simulation backend
// (kubelet/runtime/hollow), for scale tests and benchmarks of the control
// plane.
//
// Each node is a full kubelet.Run with --runtime hollow: its own name,
// client certificate (system:node:<name>, group system:nodes, so the node
// authorizer treats it as that node) and connections, its Node
// registration, Lease renewals and node status at the normal intervals,
// its watch of its own pods (spec.nodeName=<name>) and of Services, its
// pod workers, probes, restarts and event recorder: the traffic a real
// node puts on the control plane. What is simulated is below the
// kubelet's Runtime interface only: pods start at once and get addresses
// from the node's pod CIDR (Node.spec.podCIDR, from the node IPAM
// controller) without CNI, and the pods' processes do not exist.
//
// Credentials are pre-issued, not bootstrapped: the caller gives a
// function that returns a node's TLS config (IssueFrom makes one that
// signs a certificate with the cluster CA in memory, as `apiserver pki
// init --nodes` does on disk). That keeps a start of thousands of nodes
// from spending thousands of join tokens and CSR round trips that a real
// cluster spends once per machine, not per measurement, and keeps the
// keys out of the file system.
//
// What is shared between the nodes of a process, to keep a node at a few
// hundred KiB: the image list (every node has the same images, one
// slice), the pool of CAs that verifies the apiserver, the logger. What
// is not, because a real node would not share it: TLS sessions (a
// resumed TLS 1.3 session keeps the identity of the certificate it began
// with, so sharing a session cache would let one node act as another),
// connections, informers and their caches, metrics registries (but for
// the event recorders' counters, summed in Config.Registry).
//
// Every node has a root directory of its own under Config.RootDir, for
// what the kubelet keeps about its pods (the /etc files it writes for
// each pod, emptyDir volumes); a hollow runtime writes no logs.
package hollow

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/kubelet/runtime"
	hollowruntime "github.com/tugboat/tugboat/kubelet/runtime/hollow"
)

// Defaults for Config.
const (
	DefaultNamePrefix = "hollow-node-"
	// DefaultNodeIPs is where the nodes' InternalIPs come from (node i
	// gets the i+1st address). Nothing is ever sent to them: the
	// apiserver reaches kubelets over the tunnels they open.
	DefaultNodeIPs = "10.64.0.0/12"
	DefaultCPU     = "4"
	DefaultMemory  = "16Gi"
	// DefaultStartInterval paces the nodes' starts (5,000 nodes in 10 s).
	DefaultStartInterval = 2 * time.Millisecond
	// ConnBufferSize is the read and write buffer size of each node's
	// connections (client, tunnel, the NodeAPI served on it): gRPC's
	// 32 KiB each would be ~100 KiB per node for mostly idle streams.
	ConnBufferSize = 4 << 10
	// LabelHollow marks a hollow node's Node.
	LabelHollow = "node.tugboat.io/hollow"
)

// DefaultImages are present on every hollow node.
var DefaultImages = []string{"busybox", "registry.k8s.io/pause:3.10"}

// Config says which hollow nodes to run.
type Config struct {
	// Nodes is how many (required, > 0). They are named NamePrefix0,
	// NamePrefix1, ... (default DefaultNamePrefix).
	Nodes      int
	NamePrefix string
	// Server is the apiserver address (client.Config.Server).
	Server string
	// TLS returns the TLS config node presents to the apiserver: its own
	// client certificate (IssueFrom). Required: a kubelet without node
	// credentials is not a node to the authorizer.
	TLS func(node string) (*tls.Config, error)
	// RootDir holds each node's root directory, RootDir/<name>. Required.
	RootDir string
	// NodeIPs is the range the nodes' InternalIPs come from
	// (DefaultNodeIPs); it must hold Nodes addresses.
	NodeIPs netip.Prefix
	// CPU, Memory and MaxPods are each node's capacity (DefaultCPU,
	// DefaultMemory, the kubelet's default max pods).
	CPU     string
	Memory  string
	MaxPods int
	// LeaseInterval and NodeStatusInterval pace each node's heartbeat
	// and status (the kubelet's defaults if zero).
	LeaseInterval      time.Duration
	NodeStatusInterval time.Duration
	// Images are present on every node (DefaultImages).
	Images []string
	// Labels are added to every Node, besides LabelHollow=true.
	Labels map[string]string
	// StartInterval is the pause between two nodes' starts
	// (DefaultStartInterval).
	StartInterval time.Duration
	// Logger gets every node's log, each line with its node
	// (slog.Default if nil).
	Logger *slog.Logger
	// Registry, if set, is the process's: it gets the nodes' event
	// recorder counters (tugboat_events_recorded_total,
	// tugboat_events_dropped_total, tugboat_events_pending), summed
	// over the nodes. Their other metrics stay in a registry per node.
	Registry prometheus.Registerer
}

func (c *Config) setDefaults() {
	if c.NamePrefix == "" {
		c.NamePrefix = DefaultNamePrefix
	}
	if !c.NodeIPs.IsValid() {
		c.NodeIPs = netip.MustParsePrefix(DefaultNodeIPs)
	}
	if c.CPU == "" {
		c.CPU = DefaultCPU
	}
	if c.Memory == "" {
		c.Memory = DefaultMemory
	}
	if c.Images == nil {
		c.Images = DefaultImages
	}
	if c.StartInterval == 0 {
		c.StartInterval = DefaultStartInterval
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate names the first bad field by its hack/hollow flag.
func (c Config) Validate() error {
	switch {
	case c.Nodes <= 0:
		return errors.New("--nodes: must be positive")
	case c.Server == "":
		return errors.New("--server: required")
	case c.TLS == nil:
		return errors.New("--ca-file and --ca-key-file: required (each hollow node presents its own node certificate)")
	case c.RootDir == "" || !filepath.IsAbs(c.RootDir):
		return fmt.Errorf("--root-dir %q: must be an absolute path", c.RootDir)
	case c.NodeIPs.IsValid() && (!c.NodeIPs.Addr().Is4() || c.NodeIPs.Masked() != c.NodeIPs):
		return fmt.Errorf("--node-ips %s: want an IPv4 network prefix", c.NodeIPs)
	case c.NodeIPs.IsValid() && 1<<(32-c.NodeIPs.Bits())-2 < c.Nodes:
		return fmt.Errorf("--node-ips %s: too small for %d nodes", c.NodeIPs, c.Nodes)
	case c.StartInterval < 0:
		return fmt.Errorf("--start-interval %s: must not be negative", c.StartInterval)
	}
	return nil
}

// NodeName is the name of node i.
func (c Config) NodeName(i int) string {
	if c.NamePrefix == "" {
		c.NamePrefix = DefaultNamePrefix
	}
	return fmt.Sprintf("%s%d", c.NamePrefix, i)
}

// Run runs the nodes until ctx ends, and returns nil then. If a node's
// kubelet fails (a bad configuration), every node stops and Run returns
// that error.
func Run(ctx context.Context, cfg Config) error {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	images, err := imageList(cfg.Images)
	if err != nil {
		return err
	}
	labels := map[string]string{LabelHollow: "true"}
	for k, v := range cfg.Labels {
		labels[k] = v
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	ip := cfg.NodeIPs.Addr()
	t := time.NewTicker(max(cfg.StartInterval, time.Nanosecond))
	defer t.Stop()
	for i := range cfg.Nodes {
		ip = ip.Next()
		name := cfg.NodeName(i)
		tlsCfg, err := cfg.TLS(name)
		if err != nil {
			cancel(fmt.Errorf("node %s: credentials: %w", name, err))
			break
		}
		kcfg := kubelet.Config{
			Client: client.Config{Server: cfg.Server, TLS: tlsCfg, UserAgent: "kubelet/" + name,
				BufferSize: ConnBufferSize},
			NodeName:           name,
			NodeIP:             ip.String(),
			NodeLabels:         labels,
			RootDir:            filepath.Join(cfg.RootDir, name),
			Runtime:            kubelet.RuntimeHollow,
			HollowImages:       images,
			ClusterDNS:         []string{kubelet.DefaultClusterDNS},
			CPU:                cfg.CPU,
			Memory:             cfg.Memory,
			MaxPods:            cfg.MaxPods,
			LeaseInterval:      cfg.LeaseInterval,
			NodeStatusInterval: cfg.NodeStatusInterval,
			// Enough for the ~30 pods a node starts at once, without 8
			// idle goroutines per node.
			PodStatusWriters: 2,
			// The machine's memory and disks are not the node's.
			EvictionHard:   "none",
			Registry:       prometheus.NewRegistry(),
			EventsRegistry: cfg.Registry,
			Logger:         cfg.Logger,
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := kubelet.Run(ctx, kcfg); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("node %s: %w", name, err))
			}
		}()
		if cfg.StartInterval > 0 {
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	<-ctx.Done()
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// imageList normalises refs the way every runtime does.
func imageList(refs []string) ([]runtime.ImageStatus, error) {
	var out []runtime.ImageStatus
	for _, r := range refs {
		st, err := hollowruntime.New(hollowruntime.Config{}).EnsureImage(context.Background(), r, nil)
		if err != nil {
			return nil, fmt.Errorf("--images: %w", err)
		}
		out = append(out, st)
	}
	return out, nil
}

// IssueFrom returns a Config.TLS that signs each node a client
// certificate with ca (system:node:<name> in group system:nodes, valid
// pki.NodeCertValidity), trusting roots for the apiserver. The key never
// leaves memory.
func IssueFrom(ca *pki.CA, roots *x509.CertPool) func(node string) (*tls.Config, error) {
	return func(node string) (*tls.Config, error) {
		key, err := pki.NewKey()
		if err != nil {
			return nil, err
		}
		certPEM, err := ca.IssueClient(key.Public(), pki.Subject{User: pki.NodeUserPrefix + node, Groups: []string{pki.GroupNodes}}, pki.NodeCertValidity)
		if err != nil {
			return nil, err
		}
		block, _ := pem.Decode(certPEM)
		if block == nil {
			return nil, errors.New("pki: issued certificate is not PEM")
		}
		return &tls.Config{
			RootCAs:      roots,
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{{Certificate: [][]byte{block.Bytes}, PrivateKey: key}},
		}, nil
	}
}
