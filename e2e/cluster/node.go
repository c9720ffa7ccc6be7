package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/deploy/images"
	"github.com/tugboat/tugboat/e2e/netlab"
	"github.com/tugboat/tugboat/kubelet/runtime"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
)

// Node is one host of the cluster and its kubelet.
type Node struct {
	// Name is the node's name ("node1", ...).
	Name string
	Host *netlab.Host
	// IP is the host's address: the node's InternalIP.
	IP netip.Addr
	// PodCIDR is the node's pod CIDR (given as --pod-cidr unless
	// Options.NodeIPAM).
	PodCIDR netip.Prefix
	// RootDir is the kubelet's --root-dir; ImportDir its image import
	// folder; CNIConfDir its --cni-conf-dir.
	RootDir    string
	ImportDir  string
	CNIConfDir string
	// Namespace is the containerd namespace of the node's pods and
	// images: "tugboat-<node>" in the shared containerd of the native
	// backend, the CRI plugin's "k8s.io" in the node's own under CRI.
	Namespace string
	// Containerd is the node's containerd: its own under CRI (in the
	// node's network namespace, CRI plugin on, CNI config in CNIConfDir),
	// the shared one (Cluster.Containerd) with the native backend. Set
	// once the cluster started.
	Containerd *containerdtest.Containerd
	// CgroupRoot is the kubelet's --cgroup-root.
	CgroupRoot string
	// MetricsAddr serves the kubelet's /metrics and /debug/pprof.
	MetricsAddr string
	// LogPath is the kubelet's log (appended to across restarts).
	LogPath string

	c  *Cluster
	mu sync.Mutex
	// ExtraArgs are added to the kubelet's command line on its next
	// start (tests change flags across a restart).
	ExtraArgs []string
	proc      *netlab.Proc
	// token is the node's join token (Options.Join); starts after the
	// first keep passing it, the kubelet then uses the certificate.
	token string
}

func (c *Cluster) newNode(i int, h *netlab.Host) *Node {
	name := "node" + strconv.Itoa(i)
	base := c.ClusterCIDR.Addr().As4()
	root := filepath.Join(c.Dir, "nodes", name)
	return &Node{
		Name:        name,
		Host:        h,
		IP:          h.IP,
		PodCIDR:     netip.PrefixFrom(netip.AddrFrom4([4]byte{base[0], base[1], byte(i), 0}), 24),
		RootDir:     root,
		ImportDir:   filepath.Join(root, "images"),
		CNIConfDir:  filepath.Join(root, "cni", "net.d"),
		Namespace:   nodeNamespace(c.Runtime, name),
		CgroupRoot:  cgroupRoot(c.ID, name),
		MetricsAddr: h.IP.String() + ":10248",
		LogPath:     filepath.Join(c.LogDir, name+"-kubelet.log"),
		c:           c,
	}
}

func nodeNamespace(rt, name string) string {
	if rt == RuntimeCRI {
		return cri.DefaultImportNamespace
	}
	return "tugboat-" + name
}

// startContainerd starts the node's own containerd under CRI, in the
// node's network namespace (so the CNI plugins it runs make the bridge
// there), with the pause image imported; with the native backend the
// node uses the shared one.
func (n *Node) startContainerd(ctx context.Context) error {
	if n.c.Runtime != RuntimeCRI {
		n.Containerd = n.c.Containerd
		return nil
	}
	dir := filepath.Join(n.RootDir, "containerd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var err error
	n.Containerd, err = containerdtest.Start(ctx, containerdtest.Options{
		Dir: dir, NetNS: n.Host.NetnsPath, Logger: n.c.log.With("node", n.Name),
		CRI: &containerdtest.CRIOptions{SandboxImage: images.PauseRef, CNIConfDir: n.CNIConfDir},
	})
	if err != nil {
		return fmt.Errorf("cluster: containerd of %s: %w", n.Name, err)
	}
	return nil
}

// CRIEndpoint is the node's CRI endpoint (empty with the native backend),
// for crictl --runtime-endpoint.
func (n *Node) CRIEndpoint() string {
	if n.Containerd == nil {
		return ""
	}
	return n.Containerd.CRIEndpoint
}

// prepare starts the node's containerd (CRI), imports the cluster's
// images (and under CRI the pause image) into the node's namespace and,
// for Options.Join, makes the node's join token.
func (n *Node) prepare(ctx context.Context) error {
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if n.c.opts.Join {
		tok, err := v1.NewAuthClient(n.c.Client.Conn()).CreateToken(ctx, &v1.CreateTokenRequest{Type: "join", TtlSeconds: 3600, Description: "e2e " + n.Name})
		if err != nil {
			return fmt.Errorf("cluster: join token for %s: %w", n.Name, apierrors.FromGRPC(err))
		}
		n.token = tok.Token
	}
	if !n.c.opts.NodeIPAM {
		// --pod-cidr is the kubelet's own; a node may not publish it in
		// its Node (only the IPAM controller or an admin sets
		// spec.podCIDR), so the harness does, as an admin would, for the
		// other nodes' routes.
		_, err := client.For[*v1.Node](n.c.Client).Create(ctx, &v1.Node{Metadata: &v1.ObjectMeta{Name: n.Name},
			Spec: &v1.NodeSpec{PodCidr: n.PodCIDR.String(), PodCidrs: []string{n.PodCIDR.String()}}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("cluster: node %s with pod CIDR %s: %w", n.Name, n.PodCIDR, err)
		}
	}
	imgs := n.c.opts.Images
	if n.c.Runtime == RuntimeCRI {
		imgs = append([]string{"pause"}, imgs...)
	}
	if len(imgs) == 0 {
		return nil
	}
	rt, err := n.Runtime()
	if err != nil {
		return err
	}
	defer rt.Close()
	for _, name := range imgs {
		if err := n.importImage(ctx, rt, name); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) importImage(ctx context.Context, rt NodeRuntime, name string) error {
	path, err := n.c.opts.Binaries.Image(ctx, name)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := rt.ImportImage(ctx, f); err != nil {
		return fmt.Errorf("cluster: import %s on %s: %w", name, n.Name, err)
	}
	return nil
}

// ImportImage imports a test image (e2e/images name) into the node's
// containerd namespace directly, as if it had always been there.
func (n *Node) ImportImage(ctx context.Context, name string) error {
	rt, err := n.Runtime()
	if err != nil {
		return err
	}
	defer rt.Close()
	return n.importImage(ctx, rt, name)
}

// NodeRuntime is a runtime client of a node's containerd.
type NodeRuntime interface {
	runtime.Runtime
	Close() error
}

// Runtime is a runtime client of the node's runtime, the kubelet's
// backend (CRI, or containerd's API on the node's namespace), for tests
// to look at sandboxes, containers and images; the caller closes it.
func (n *Node) Runtime() (NodeRuntime, error) {
	if n.c.Runtime == RuntimeCRI {
		return cri.New(cri.Config{Endpoint: n.Containerd.CRIEndpoint, CgroupParent: n.CgroupRoot}, nil)
	}
	return containerd.New(containerd.Config{Address: n.Containerd.Address, Namespace: n.Namespace, CgroupParent: n.CgroupRoot}, nil)
}

// Args is the kubelet's command line (without the binary).
func (n *Node) Args() []string {
	c := n.c
	args := c.ClientArgs("node-" + n.Name)
	if c.opts.Join {
		args = []string{"--server", c.Server, "--ca-file", filepath.Join(c.PKIDir(), "ca.crt")}
		if n.token != "" {
			args = append(args, "--bootstrap-token", n.token)
		}
	}
	args = append(args,
		"--node-name", n.Name,
		"--node-ip", n.IP.String(),
		"--root-dir", n.RootDir,
		"--cgroup-root", n.CgroupRoot,
		"--cni-conf-dir", n.CNIConfDir,
		"--cluster-cidr", c.ClusterCIDR.String(),
		"--metrics-listen", n.MetricsAddr,
		"--lease-interval", "1s",
		"--node-status-interval", "1s",
		"--crash-backoff", "1s",
		"--crash-backoff-max", "8s",
		"--image-pull-backoff", "1s",
		"--image-pull-backoff-max", "8s",
		// The test machine's disk fill is not the test's business: no
		// pressure evictions unless a test asks (ExtraArgs come later).
		"--eviction-hard", "none",
		"--log-level", "debug",
	)
	if c.Runtime == RuntimeCRI {
		args = append(args, "--runtime", RuntimeCRI, "--container-runtime-endpoint", n.Containerd.CRIEndpoint)
	} else {
		args = append(args, "--runtime", RuntimeContainerd, "--containerd-socket", n.Containerd.Address, "--containerd-namespace", n.Namespace)
	}
	if !c.opts.NodeIPAM {
		args = append(args, "--pod-cidr", n.PodCIDR.String())
	}
	args = append(args, c.opts.KubeletArgs...)
	n.mu.Lock()
	defer n.mu.Unlock()
	return append(args, n.ExtraArgs...)
}

// Start starts the node's kubelet (again, after Stop or Kill).
func (n *Node) Start() error {
	n.mu.Lock()
	running := n.proc != nil && !n.proc.Exited()
	n.mu.Unlock()
	if running {
		return fmt.Errorf("cluster: %s: the kubelet is running", n.Name)
	}
	f, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "==== kubelet started %s ====\n", time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(n.c.opts.Binaries.Kubelet, n.Args()...)
	cmd.Stdout, cmd.Stderr = f, f
	p, err := n.Host.Start(n.c.ctx, cmd)
	f.Close() // the child has its own copy
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	return nil
}

// Kill kills the kubelet with SIGKILL (its containers keep running).
func (n *Node) Kill() error {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Kill()
}

// Stop stops the kubelet with SIGTERM, SIGKILL after 10s.
func (n *Node) Stop() {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p == nil || p.Exited() {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p.Wait(ctx) != nil && !p.Exited() {
		_ = p.Kill()
	}
}

// PID is the kubelet's process id (0 if it never started).
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.PID()
}

// Exited reports whether the kubelet process has exited.
func (n *Node) Exited() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc == nil || n.proc.Exited()
}

// WaitReady waits until the Node reports Ready=True.
func (n *Node) WaitReady(ctx context.Context) error {
	return n.waitCondition(ctx, "True", "")
}

// WaitCondition waits until the Node's Ready condition has status and
// (if not empty) a message containing msg; it returns the condition.
func (n *Node) waitCondition(ctx context.Context, status, msg string) error {
	var last *v1.Condition
	// The caller's ctx is the deadline.
	err := wait.Until(ctx, maxWait, func(ctx context.Context) error {
		node, err := client.For[*v1.Node](n.c.Client).Get(ctx, "", n.Name)
		if err == nil {
			for _, c := range node.GetStatus().GetConditions() {
				if c.Type == "Ready" {
					last = c
					if c.Status == status && strings.Contains(c.Message, msg) {
						return nil
					}
				}
			}
		}
		if n.Exited() {
			return wait.Stop(fmt.Errorf("cluster: the kubelet of %s exited; see %s", n.Name, n.LogPath))
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("Ready is %v", last)
	})
	if err != nil && !n.Exited() {
		return fmt.Errorf("cluster: %s: want Ready %s %q: %w; see %s", n.Name, status, msg, err, n.LogPath)
	}
	return err
}

// maxWait bounds the waits whose deadline is the caller's context.
const maxWait = 24 * time.Hour

// WaitReadyCondition waits for the Node's Ready condition to have status
// and a message containing msg.
func (n *Node) WaitReadyCondition(ctx context.Context, status, msg string) error {
	return n.waitCondition(ctx, status, msg)
}

// RouteFromRoot routes the node's pod CIDR from the test process's
// namespace through the node, so tests can reach its pods.
func (n *Node) RouteFromRoot() error {
	err := n.c.Lab.RouteFromRoot(n.PodCIDR, n.Host)
	if err != nil && errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return err
}

// NetNSPins are the pinned network namespaces of the node's pods: the
// kubelet's (native backend) or the runtime's, under its state folder
// (CRI).
func (n *Node) NetNSPins() []string {
	dir := filepath.Join(n.RootDir, "netns")
	if n.c.Runtime == RuntimeCRI {
		dir = filepath.Join(n.Containerd.Dir, "state", "io.containerd.grpc.v1.cri", "netns")
	}
	pins, _ := filepath.Glob(filepath.Join(dir, "*"))
	return pins
}
