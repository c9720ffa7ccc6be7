package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tugboat/tugboat/api/client"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/wait"
	"github.com/tugboat/tugboat/e2e/netlab"
	"github.com/tugboat/tugboat/kubelet/network/networktest"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd/containerdtest"
)

// Options describe a cluster.
type Options struct {
	// Binaries to run (BuildBinaries). Required.
	Binaries *Binaries
	// Nodes is the number of nodes (default 1).
	Nodes int
	// Images are the test images (e2e/images names: "busybox", "echo")
	// imported on every node before its kubelet starts (default busybox).
	// Use []string{} for none.
	Images []string
	// KubeletArgs are appended to every kubelet's command line; a flag
	// given here overrides the harness's value.
	KubeletArgs []string
	// Runtime is the kubelets' --runtime: "cri" (each node runs a
	// containerd of its own with the CRI plugin, in its network
	// namespace, as a real node does) or "containerd" (the native
	// backend: one containerd all nodes share, a containerd namespace
	// each). Default: $TUGBOAT_E2E_RUNTIME, else "cri".
	Runtime string
	// APIServerArgs, SchedulerArgs and ControllerManagerArgs are appended
	// to those command lines (e.g. a short --event-ttl).
	APIServerArgs         []string
	SchedulerArgs         []string
	ControllerManagerArgs []string
	// NodeIPAM leaves the kubelets without --pod-cidr: the node IPAM
	// controller of the controller-manager must set Node.spec.podCIDR.
	NodeIPAM bool
	// Join has kubelets join with a one-time join token (a bootstrap
	// token Secret the harness creates) instead of a certificate from
	// `apiserver pki init`.
	Join bool
	// NoScheduler and NoControllerManager keep those binaries from being
	// started even when they were built; with NoControllerManager the
	// controller-manager still runs its root-ca-cert-publisher alone (no
	// controller acts on pods or nodes), so the kube-root-ca.crt ConfigMap
	// every pod's service account volume projects exists in every namespace.
	NoScheduler         bool
	NoControllerManager bool
	// BaseDir holds the run directories (default DefaultBaseDir).
	BaseDir string
	// LogDir receives every process's output (default: <run dir>/logs).
	LogDir string
	// APIServers, if more than 1, runs that many apiservers on one etcd
	// process of their own (Debian's etcd, client-certificate TLS) instead
	// of one apiserver with embedded etcd; every client (kubelets,
	// scheduler, controller-manager, Client) is given all their addresses.
	APIServers int
	// Name is the run id (netlab.Config.Name); empty: random.
	Name   string
	Logger *slog.Logger
}

// Runtime backends (Options.Runtime), as the kubelet's --runtime.
const (
	RuntimeCRI        = "cri"
	RuntimeContainerd = "containerd"
)

// DefaultBaseDir holds one directory per cluster run; short, so unix socket
// paths under it stay short.
const DefaultBaseDir = "/tmp/tugboat-cluster"

// Cluster is a running test cluster.
type Cluster struct {
	// ID is the run id, also the netlab lab's ID.
	ID string
	// Dir is the run directory: etcd data, containerd, nodes' root dirs.
	Dir    string
	LogDir string
	Lab    *netlab.Lab
	// Runtime is the kubelets' backend (Options.Runtime).
	Runtime string
	// Containerd is, with the native backend, the one private containerd
	// all nodes share (each node in its own containerd namespace,
	// "tugboat-<node>"); nil under CRI, where each node has its own
	// (Node.Containerd).
	Containerd *containerdtest.Containerd
	// Server is the apiserver's address (on the lab's root IP, so hosts
	// reach it); Client a client of it. KubeServer is the address of its
	// Kubernetes HTTP API (kubectl, client-go), https://KubeServer.
	Server     string
	KubeServer string
	Client     *client.Client
	// Servers is each apiserver's address (one unless
	// Options.APIServers); Server is them comma-separated.
	Servers []string
	// apiservers are the processes behind Servers, in that order.
	apiservers []*apiserverProc
	// ClusterCIDR is split into the nodes' /24 pod CIDRs.
	ClusterCIDR netip.Prefix
	Nodes       []*Node
	// Scheduler and ControllerManager tell whether those run (the
	// controller-manager with every controller, not only the CA publisher).
	Scheduler         bool
	ControllerManager bool
	// MetricsAddrs are the /metrics addresses of the control plane by
	// process name ("apiserver", "scheduler", "controller-manager").
	MetricsAddrs map[string]string

	opts   Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	lock   *os.File
	procs  []*process // control plane, in start order

	closeOnce sync.Once
	closeErr  error
}

// Check says why a cluster cannot run here (not root; containerd, runc,
// CNI plugins or iptables missing), or nil.
func Check() error {
	if err := containerdtest.Check(); err != nil {
		return err
	}
	return networktest.Check()
}

// New starts a cluster: it removes what killed runs left behind, makes the
// network lab, starts containerd, the apiserver (with embedded etcd),
// the scheduler and controller-manager when built, and one kubelet per
// node, and waits until every node is Ready. Close removes it all.
func New(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Binaries == nil {
		return nil, errors.New("cluster: Options.Binaries is required")
	}
	if err := Check(); err != nil {
		return nil, err
	}
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.Images == nil {
		opts.Images = []string{"busybox"}
	}
	if opts.BaseDir == "" {
		opts.BaseDir = DefaultBaseDir
	}
	if opts.Runtime == "" {
		opts.Runtime = cmp.Or(os.Getenv("TUGBOAT_E2E_RUNTIME"), RuntimeCRI)
	}
	if opts.Runtime != RuntimeCRI && opts.Runtime != RuntimeContainerd {
		return nil, fmt.Errorf("cluster: runtime %q: want %s or %s", opts.Runtime, RuntimeCRI, RuntimeContainerd)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	setup, err := lockSetup(opts.BaseDir)
	if err != nil {
		return nil, err
	}
	if _, err := cleanupStaleLocked(ctx, opts.BaseDir, opts.Logger); err != nil {
		setup.Close()
		return nil, fmt.Errorf("cluster: removing stale runs: %w", err)
	}
	lab, err := netlab.New(ctx, netlab.Config{Name: opts.Name, Hosts: opts.Nodes, Logger: opts.Logger})
	if err != nil {
		setup.Close()
		return nil, err
	}
	cctx, cancel := context.WithCancel(context.Background())
	c := &Cluster{ID: lab.ID, Dir: filepath.Join(opts.BaseDir, lab.ID), Lab: lab, Runtime: opts.Runtime, opts: opts, log: opts.Logger.With("cluster", lab.ID), ctx: cctx, cancel: cancel}
	c.LogDir = opts.LogDir
	if c.LogDir == "" {
		c.LogDir = filepath.Join(c.Dir, "logs")
	}
	c.lock, err = lockRun(c.Dir)
	setup.Close()
	if err != nil {
		c.cancel()
		lab.Close()
		return nil, err
	}
	if err := c.start(ctx); err != nil {
		if cerr := c.Close(); cerr != nil {
			c.log.Warn("cleanup after a failed start", "err", cerr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	var err error
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return err
	}
	// The lab's subnet is unique among concurrent runs; so is this.
	third := c.Lab.Subnet.Addr().As4()[2]
	c.ClusterCIDR = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200 + third%40, 0, 0}), 16)

	if c.Runtime == RuntimeContainerd {
		if err := os.MkdirAll(filepath.Join(c.Dir, "containerd"), 0o755); err != nil {
			return err
		}
		if c.Containerd, err = containerdtest.Start(ctx, containerdtest.Options{Dir: filepath.Join(c.Dir, "containerd"), Logger: c.log}); err != nil {
			return err
		}
	}
	if err := c.startAPIServer(ctx); err != nil {
		return err
	}
	bins := c.opts.Binaries
	if bins.Scheduler != "" && !c.opts.NoScheduler {
		m, err := c.metricsAddr("scheduler")
		if err != nil {
			return err
		}
		args := append(append(c.ClientArgs("scheduler"), "--metrics-listen", m), c.opts.SchedulerArgs...)
		if _, err := c.startProcess("scheduler", bins.Scheduler, args...); err != nil {
			return err
		}
		c.Scheduler = true
	}
	if bins.ControllerManager != "" {
		m, err := c.metricsAddr("controller-manager")
		if err != nil {
			return err
		}
		args := append(c.ClientArgs("controller-manager"), "--metrics-listen", m)
		if c.opts.NoControllerManager {
			// Only the root CA publisher: every pod mounts kube-root-ca.crt
			// through its service account volume, as in Kubernetes.
			args = append(args, "--controllers", "root-ca-cert-publisher")
		} else {
			args = append(args, c.opts.ControllerManagerArgs...)
		}
		if _, err := c.startProcess("controller-manager", bins.ControllerManager, args...); err != nil {
			return err
		}
		c.ControllerManager = !c.opts.NoControllerManager
	}
	for i, h := range c.Lab.Hosts {
		c.Nodes = append(c.Nodes, c.newNode(i+1, h))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.Nodes))
	for i, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.prepare(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := n.Start(); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return c.WaitNodesReady(wctx)
}

// process is a control-plane process in the root namespace.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (c *Cluster) startProcess(name, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(c.LogDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Forked from the lab's spawner thread, which lives as long as the lab:
	// Pdeathsig fires when the forking thread ends.
	if err := c.Lab.StartInRoot(cmd); err != nil {
		return nil, fmt.Errorf("cluster: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	c.log.Info("started", "process", name, "pid", cmd.Process.Pid, "log", logPath)
	return p, nil
}

func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// metricsAddr picks a free loopback port for a control-plane process's
// /metrics and records it in MetricsAddrs.
func (c *Cluster) metricsAddr(name string) (string, error) {
	port, err := freePort(netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		return "", err
	}
	if c.MetricsAddrs == nil {
		c.MetricsAddrs = map[string]string{}
	}
	c.MetricsAddrs[name] = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return c.MetricsAddrs[name], nil
}

func freePort(ip netip.Addr) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip.String(), "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// PKIDir holds the cluster CA and the certificates of every component
// (apiserver pki init): admin, scheduler, controller-manager, proxy and
// node-<name> for each node.
func (c *Cluster) PKIDir() string { return filepath.Join(c.Dir, "pki") }

// ClientArgs are the flags a component needs to reach the apiserver as
// identity (a certificate pair in PKIDir: "admin", "node-node1", ...).
func (c *Cluster) ClientArgs(identity string) []string {
	return []string{"--server", c.Server,
		"--ca-file", filepath.Join(c.PKIDir(), "ca.crt"),
		"--cert-file", filepath.Join(c.PKIDir(), identity+".crt"),
		"--key-file", filepath.Join(c.PKIDir(), identity+".key")}
}

// ClientAs returns a client presenting the certificate pair identity; the
// caller closes it.
func (c *Cluster) ClientAs(identity string) (*client.Client, error) {
	return c.clientAt(c.Server, identity)
}

// clientAt is ClientAs for the apiserver(s) at server.
func (c *Cluster) clientAt(server, identity string) (*client.Client, error) {
	tlsCfg, err := client.TLSFromFiles(filepath.Join(c.PKIDir(), "ca.crt"),
		filepath.Join(c.PKIDir(), identity+".crt"), filepath.Join(c.PKIDir(), identity+".key"))
	if err != nil {
		return nil, err
	}
	return client.New(client.Config{Server: server, TLS: tlsCfg, UserAgent: "e2e-" + identity})
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	nodes := make([]string, c.opts.Nodes)
	for i := range nodes {
		nodes[i] = "node" + strconv.Itoa(i+1)
	}
	pkiInit := exec.CommandContext(ctx, c.opts.Binaries.APIServer, "pki", "init", "--dir", c.PKIDir(),
		"--server-ips", c.Lab.RootIP.String(), "--nodes", strings.Join(nodes, ","))
	if out, err := pkiInit.CombinedOutput(); err != nil {
		return fmt.Errorf("cluster: apiserver pki init: %v: %s", err, out)
	}
	if c.opts.APIServers > 1 {
		return c.startAPIServers(ctx, c.opts.APIServers)
	}
	port, err := freePort(c.Lab.RootIP)
	if err != nil {
		return err
	}
	c.Server = net.JoinHostPort(c.Lab.RootIP.String(), strconv.Itoa(port))
	kport, err := freePort(c.Lab.RootIP)
	if err != nil {
		return err
	}
	c.KubeServer = net.JoinHostPort(c.Lab.RootIP.String(), strconv.Itoa(kport))
	c.Servers = []string{c.Server}
	m, err := c.metricsAddr("apiserver")
	if err != nil {
		return err
	}
	p, err := c.startProcess("apiserver", c.opts.Binaries.APIServer, append([]string{
		"--listen", c.Server, "--kube-listen", c.KubeServer, "--metrics-listen", m, "--pki-dir", c.PKIDir(),
		"--data-dir", filepath.Join(c.Dir, "etcd"), "--bookmark-interval", "1s"}, c.opts.APIServerArgs...)...)
	if err != nil {
		return err
	}
	if c.Client, err = c.ClientAs("admin"); err != nil {
		return err
	}
	return c.waitAPIServer(ctx, p, c.Server)
}

// waitAPIServer waits until the apiserver p at addr answers.
func (c *Cluster) waitAPIServer(ctx context.Context, p *process, addr string) error {
	cl, err := c.clientAt(addr, "admin")
	if err != nil {
		return err
	}
	defer cl.Close()
	err = wait.Until(ctx, 30*time.Second, func(ctx context.Context) error {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := client.For[*v1.Namespace](cl).Get(rctx, "", "default")
		cancel()
		select {
		case <-p.done:
			return wait.Stop(fmt.Errorf("cluster: the apiserver exited; see %s", p.log))
		default:
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("cluster: the apiserver at %s is not ready: %w; see %s", addr, err, p.log)
	}
	return nil
}

// Close stops the kubelets, containerd (killing every container), the
// control plane and the lab, and removes the run directory and cgroups.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.close() })
	return c.closeErr
}

func (c *Cluster) close() error {
	var errs []error
	for _, n := range c.Nodes {
		n.Stop()
		if n.Containerd != nil && n.Containerd != c.Containerd {
			if err := n.Containerd.Stop(); err != nil {
				errs = append(errs, fmt.Errorf("containerd of %s: %w", n.Name, err))
			}
		}
	}
	if c.Containerd != nil {
		if err := c.Containerd.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].stop()
	}
	if c.Client != nil {
		c.Client.Close()
	}
	c.cancel()
	if err := c.Lab.Close(); err != nil {
		errs = append(errs, err)
	}
	if err := removeRun(c.Dir, c.log); err != nil {
		errs = append(errs, err)
	}
	if c.lock != nil {
		c.lock.Close()
	}
	return errors.Join(errs...)
}

// WaitNodesReady waits until every node is Ready.
func (c *Cluster) WaitNodesReady(ctx context.Context) error {
	for _, n := range c.Nodes {
		if err := n.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// PIDs returns the process ids of the control plane ("apiserver",
// "scheduler", "controller-manager") and of "containerd" (the shared one
// of the native backend; "containerd-<node>" for each node's under CRI).
func (c *Cluster) PIDs() map[string]int {
	out := map[string]int{}
	for _, p := range c.procs {
		out[p.name] = p.cmd.Process.Pid
	}
	if c.Containerd != nil {
		out["containerd"] = c.Containerd.PID
	}
	for _, n := range c.Nodes {
		if n.Containerd != nil && n.Containerd != c.Containerd {
			out["containerd-"+n.Name] = n.Containerd.PID
		}
	}
	return out
}

// Node returns the node called name, or nil.
func (c *Cluster) Node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}
