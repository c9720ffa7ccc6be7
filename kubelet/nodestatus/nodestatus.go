// Package nodestatus keeps the kubelet's Node object true: it registers
// the Node, renews its Lease and reports the node's status.
//
// Loop: Run registers the Node (creating it, or adopting an existing one:
// labels merged, spec.podCIDR set from --pod-cidr when the node has none),
// then runs two loops until ctx ends:
//
//   - lease: every LeaseInterval the Lease kube-node-lease/<node> gets a
//     new spec.renewTime (the node lifecycle controller's heartbeat);
//   - status: every StatusInterval the status is recomputed — capacity and
//     allocatable (cpu, memory, pods) from the machine or the overrides,
//     InternalIP and Hostname addresses, nodeInfo (kernel, OS, containerd
//     and kubelet versions), images, and the conditions Ready (KubeletReady,
//     or ContainerRuntimeNotReady / NetworkPluginNotReady with the reason
//     in the message), MemoryPressure and DiskPressure (from Config.Pressure:
//     the eviction thresholds) — and written when it changed, or at least
//     every StatusReportInterval.
//
// PodCIDR blocks until the node has a pod CIDR: --pod-cidr, or
// Node.spec.podCIDR as the node IPAM controller sets it.
package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	goruntime "runtime"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// Defaults for Config.
const (
	DefaultLeaseInterval        = 10 * time.Second
	DefaultStatusInterval       = 10 * time.Second
	DefaultStatusReportInterval = time.Minute
	DefaultMaxPods              = 110
	// LeaseNamespace holds the nodes' leases.
	LeaseNamespace = "kube-node-lease"
	// Memory and disk pressure thresholds, as Kubernetes' default
	// hard eviction thresholds.
	memoryPressureBytes = 100 << 20
	diskPressureRatio   = 0.10
	maxImages           = 50
)

// Config describes the node.
type Config struct {
	// NodeName is the Node's name. Required.
	NodeName string
	// NodeIP is the InternalIP address. Required.
	NodeIP netip.Addr
	// Hostname is the Hostname address (default: os.Hostname).
	Hostname string
	// Labels are added to the Node's (kubernetes.io/hostname, os and arch
	// are always set).
	Labels map[string]string
	// CPU and Memory override the machine's capacity ("4", "8Gi").
	CPU    string
	Memory string
	// MaxPods is the pods capacity (DefaultMaxPods).
	MaxPods int
	// PodCIDR, if set, is the node's pod CIDR (--pod-cidr), used instead
	// of spec.podCIDR; never written to the Node (a node may not set its
	// own pod CIDR: the node IPAM controller or an admin does).
	PodCIDR string
	// LeaseInterval is how often the Lease is renewed; its duration is 4
	// times that (DefaultLeaseInterval).
	LeaseInterval time.Duration
	// StatusInterval is how often the status is recomputed
	// (DefaultStatusInterval); StatusReportInterval bounds how long an
	// unchanged status goes unwritten (DefaultStatusReportInterval).
	StatusInterval       time.Duration
	StatusReportInterval time.Duration
	// KubeletVersion is reported in nodeInfo.
	KubeletVersion string
	// RootDir is the kubelet's root directory: its file system is checked
	// for disk pressure when Pressure is nil.
	RootDir string
	// Pressure, if set, decides MemoryPressure and DiskPressure (the
	// eviction manager's thresholds); nil: built-in thresholds (100Mi of
	// memory, 10% of RootDir's file system).
	Pressure Pressure
	Logger   *slog.Logger
	// Registry, if set, gets the agent's metrics.
	Registry prometheus.Registerer
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.NodeName == "":
		return errors.New("--node-name: required")
	case !c.NodeIP.IsValid():
		return errors.New("--node-ip: required")
	case c.MaxPods < 0:
		return fmt.Errorf("--max-pods %d: must not be negative", c.MaxPods)
	case c.LeaseInterval < 0 || c.StatusInterval < 0 || c.StatusReportInterval < 0:
		return errors.New("--lease-interval and --node-status-interval: must not be negative")
	}
	if c.CPU != "" {
		if q, err := resource.Parse(c.CPU); err != nil || q.MilliValue() <= 0 {
			return fmt.Errorf("--cpu %q: want a positive quantity such as 4 or 3500m", c.CPU)
		}
	}
	if c.Memory != "" {
		if q, err := resource.Parse(c.Memory); err != nil || q.Value() <= 0 {
			return fmt.Errorf("--memory %q: want a positive quantity such as 8Gi", c.Memory)
		}
	}
	if c.PodCIDR != "" {
		p, err := netip.ParsePrefix(c.PodCIDR)
		if err != nil || p.Masked() != p {
			return fmt.Errorf("--pod-cidr %q: want a network prefix such as 10.244.1.0/24", c.PodCIDR)
		}
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Hostname == "" {
		c.Hostname, _ = os.Hostname()
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.LeaseInterval == 0 {
		c.LeaseInterval = DefaultLeaseInterval
	}
	if c.StatusInterval == 0 {
		c.StatusInterval = DefaultStatusInterval
	}
	if c.StatusReportInterval == 0 {
		c.StatusReportInterval = DefaultStatusReportInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Pressure reports whether the node is short of memory or disk, with a
// message for the condition.
type Pressure interface {
	MemoryPressure() (bool, string)
	DiskPressure() (bool, string)
}

// Runtime is what the agent asks the container runtime.
type Runtime interface {
	Version(ctx context.Context) (runtime.VersionInfo, error)
	ListImages(ctx context.Context) ([]runtime.ImageStatus, error)
}

// Agent registers the node and keeps its Lease and status current.
type Agent struct {
	cfg     Config
	nodes   *client.Typed[*v1.Node]
	leases  *client.Typed[*v1.Lease]
	rt      Runtime
	network func(ctx context.Context) error
	log     *slog.Logger
	now     func() time.Time

	updates *prometheus.CounterVec
	renews  *prometheus.CounterVec

	mu         sync.Mutex
	node       *v1.Node // as last written or read
	podCIDR    string
	cidrKnown  chan struct{}
	registered chan struct{}
	lastWrite  time.Time
	// lease is the node's Lease as the agent last wrote it, the base of
	// the next renewal (nil until then, or after a failed one).
	lease *v1.Lease
	// refresh asks the status loop for an update now (Refresh).
	refresh chan struct{}
}

// New makes an Agent. network reports whether pods can get a network (nil)
// or why not; the Ready condition shows its error as NetworkPluginNotReady.
func New(cfg Config, c *client.Client, rt Runtime, network func(ctx context.Context) error) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	a := &Agent{
		cfg: cfg, nodes: client.For[*v1.Node](c), leases: client.For[*v1.Lease](c), rt: rt, network: network,
		log: cfg.Logger, now: time.Now,
		cidrKnown: make(chan struct{}), registered: make(chan struct{}), refresh: make(chan struct{}, 1),
		updates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_node_status_updates_total", Help: "Node status writes by result.",
		}, []string{"result"}),
		renews: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tugboat_kubelet_lease_renewals_total", Help: "Node lease renewals by result.",
		}, []string{"result"}),
	}
	if cfg.Registry != nil {
		for _, col := range []prometheus.Collector{a.updates, a.renews} {
			if err := cfg.Registry.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return a, nil
}

// Run registers the node, then renews the lease and reports status until
// ctx ends.
func (a *Agent) Run(ctx context.Context) error {
	backoff := 200 * time.Millisecond
	for {
		err := a.register(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		a.log.Warn("registering the node", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
	close(a.registered)
	a.log.Info("node registered", "ip", a.cfg.NodeIP)
	// The lease loop beside, the status loop on Run's own goroutine (one
	// goroutine fewer per node than a goroutine each).
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.leaseLoop(ctx) }()
	a.statusLoop(ctx)
	wg.Wait()
	return nil
}

// Refresh asks for a status update now instead of at the next interval:
// an input of the conditions changed (the pod network became ready, say).
// It does not wait.
func (a *Agent) Refresh() {
	select {
	case a.refresh <- struct{}{}:
	default:
	}
}

// Node returns the Node as last read or written (nil before registration),
// for events about the node.
func (a *Agent) Node() *v1.Node {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.node
}

// Registered is closed once the Node exists.
func (a *Agent) Registered() <-chan struct{} { return a.registered }

// PodCIDR waits until the node's pod CIDR is known and returns it.
func (a *Agent) PodCIDR(ctx context.Context) (string, error) {
	select {
	case <-a.cidrKnown:
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.podCIDR, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// CurrentPodCIDR returns the pod CIDR if known, without waiting.
func (a *Agent) CurrentPodCIDR() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.podCIDR
}

func (a *Agent) labels() map[string]string {
	l := map[string]string{
		"kubernetes.io/hostname": a.cfg.NodeName,
		"kubernetes.io/os":       goruntime.GOOS,
		"kubernetes.io/arch":     goruntime.GOARCH,
	}
	for k, v := range a.cfg.Labels {
		l[k] = v
	}
	return l
}

// register creates the Node or adopts the existing one.
func (a *Agent) register(ctx context.Context) error {
	// No spec.podCIDR, even with --pod-cidr: a node may not set its own
	// (the apiserver's node restriction); the node IPAM controller or an
	// admin assigns it, and --pod-cidr stays this kubelet's local setting.
	node := &v1.Node{
		Metadata: &v1.ObjectMeta{Name: a.cfg.NodeName, Labels: a.labels()},
		Spec:     &v1.NodeSpec{},
	}
	out, err := a.nodes.Create(ctx, node)
	if apierrors.IsAlreadyExists(err) {
		out, err = a.nodes.Mutate(ctx, "", a.cfg.NodeName, false, func(n *v1.Node) error {
			m := v1.Meta(n)
			if m.Labels == nil {
				m.Labels = map[string]string{}
			}
			for k, v := range a.labels() {
				m.Labels[k] = v
			}
			return nil
		})
	}
	if err != nil {
		return err
	}
	a.setNode(out)
	return a.updateStatus(ctx, true)
}

// setNode records the Node as read or written, and its pod CIDR.
func (a *Agent) setNode(n *v1.Node) {
	// Without metadata.managedFields, as the informers cache objects: the
	// agent never writes this copy back (Mutate reads the Node again), and
	// the field manager's entries, google.protobuf.Structs of every field
	// the kubelet and the node IPAM controller set, were most of the
	// decoded Node (~20 KiB of a hollow node's heap).
	if m := n.GetMetadata(); m != nil {
		m.ManagedFields = nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.node = n
	cidr := a.cfg.PodCIDR
	if cidr == "" {
		cidr = n.GetSpec().GetPodCidr()
	} else if have := n.GetSpec().GetPodCidr(); have != "" && have != cidr {
		a.log.Warn("--pod-cidr differs from the node's spec.podCIDR; using --pod-cidr", "flag", cidr, "spec", have)
	}
	if cidr == "" || a.podCIDR != "" {
		if a.podCIDR != "" && cidr != "" && cidr != a.podCIDR {
			a.log.Warn("the node's pod CIDR changed; keeping the one pods were set up with until the kubelet restarts", "old", a.podCIDR, "new", cidr)
		}
		return
	}
	a.podCIDR = cidr
	close(a.cidrKnown)
}

func (a *Agent) leaseLoop(ctx context.Context) {
	t := time.NewTicker(a.cfg.LeaseInterval)
	defer t.Stop()
	for {
		if err := a.renewLease(ctx); err != nil && ctx.Err() == nil {
			a.renews.WithLabelValues("error").Inc()
			a.log.Warn("renewing the node lease", "err", err)
		} else {
			a.renews.WithLabelValues("ok").Inc()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) statusLoop(ctx context.Context) {
	interval := a.cfg.StatusInterval
	for {
		a.mu.Lock()
		waitingForCIDR := a.podCIDR == ""
		a.mu.Unlock()
		wait := interval
		if waitingForCIDR {
			wait = min(interval, time.Second) // look for the pod CIDR more often
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		case <-a.refresh:
		}
		if waitingForCIDR {
			if n, err := a.nodes.Get(ctx, "", a.cfg.NodeName); err == nil {
				a.setNode(n)
			}
		}
		if err := a.updateStatus(ctx, false); err != nil && ctx.Err() == nil {
			a.log.Warn("updating node status", "err", err)
		}
	}
}

// leaseDuration is how long the lease holds without renewal.
func (a *Agent) leaseDuration() int32 {
	return int32(max(4*a.cfg.LeaseInterval/time.Second, 1))
}

// renewLease renews the node's Lease as Kubernetes' kubelet does: an
// Update of the lease it last wrote (compare-and-swap on that version),
// without reading it first; only when there is none, or that Update fails
// (a conflict, or an answer lost), does it read the lease and update what
// it read. At 1,000 nodes that is 100 requests a second fewer.
func (a *Agent) renewLease(ctx context.Context) error {
	now := timestampNow(a.now())
	a.mu.Lock()
	last := a.lease
	a.lease = nil
	a.mu.Unlock()
	if last != nil {
		next := proto.Clone(last).(*v1.Lease)
		next.Spec.RenewTime = now
		if out, err := a.leases.Update(ctx, next); err == nil {
			a.keepLease(out)
			return nil
		} else if ctx.Err() != nil {
			return err
		}
	}
	out, err := a.leases.Mutate(ctx, LeaseNamespace, a.cfg.NodeName, false, func(l *v1.Lease) error {
		if l.Spec == nil {
			l.Spec = &v1.LeaseSpec{}
		}
		l.Spec.HolderIdentity = a.cfg.NodeName
		l.Spec.LeaseDurationSeconds = a.leaseDuration()
		l.Spec.RenewTime = now
		return nil
	})
	if err == nil {
		a.keepLease(out)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	lease := &v1.Lease{
		Metadata: &v1.ObjectMeta{Name: a.cfg.NodeName, Namespace: LeaseNamespace},
		Spec: &v1.LeaseSpec{HolderIdentity: a.cfg.NodeName, LeaseDurationSeconds: a.leaseDuration(),
			AcquireTime: now, RenewTime: now},
	}
	a.mu.Lock()
	if n := a.node; n != nil {
		lease.Metadata.OwnerReferences = []*v1.OwnerReference{{ApiVersion: "v1", Kind: "Node", Name: n.GetMetadata().GetName(), Uid: n.GetMetadata().GetUid()}}
	}
	a.mu.Unlock()
	out, err = a.leases.Create(ctx, lease)
	if apierrors.IsAlreadyExists(err) {
		return nil // created concurrently; renewed next time
	}
	if err == nil {
		a.keepLease(out)
	}
	return err
}

// keepLease keeps l as the base of the next renewal if it is the node's
// own (held by the node, with a spec).
func (a *Agent) keepLease(l *v1.Lease) {
	if l.GetSpec().GetHolderIdentity() != a.cfg.NodeName {
		return
	}
	a.mu.Lock()
	a.lease = l
	a.mu.Unlock()
}

// updateStatus computes the status and writes it if it changed (or force,
// or the report interval passed). A Node deleted under the kubelet is
// registered again.
func (a *Agent) updateStatus(ctx context.Context, force bool) error {
	a.mu.Lock()
	cur := a.node
	last := a.lastWrite
	a.mu.Unlock()
	next := a.computeStatus(ctx, cur.GetStatus())
	due := force || a.now().Sub(last) >= a.cfg.StatusReportInterval
	if !due && sameStatus(cur.GetStatus(), next) {
		return nil
	}
	stampHeartbeat(next, a.now())
	out, err := a.nodes.Mutate(ctx, "", a.cfg.NodeName, true, func(n *v1.Node) error {
		n.Status = next
		return nil
	})
	if apierrors.IsNotFound(err) && !force {
		a.log.Warn("the Node was deleted; registering it again")
		a.updates.WithLabelValues("reregister").Inc()
		return a.register(ctx)
	}
	if err != nil {
		a.updates.WithLabelValues("error").Inc()
		return err
	}
	a.updates.WithLabelValues("ok").Inc()
	a.mu.Lock()
	a.lastWrite = a.now()
	a.mu.Unlock()
	a.setNode(out)
	return nil
}

// sameStatus compares statuses ignoring heartbeat times.
func sameStatus(a, b *v1.NodeStatus) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := proto.Clone(a).(*v1.NodeStatus), proto.Clone(b).(*v1.NodeStatus)
	for _, s := range []*v1.NodeStatus{x, y} {
		for _, c := range s.Conditions {
			c.LastHeartbeatTime = nil
		}
	}
	return proto.Equal(x, y)
}

func stampHeartbeat(s *v1.NodeStatus, now time.Time) {
	for _, c := range s.Conditions {
		c.LastHeartbeatTime = timestampNow(now)
	}
}

// computeStatus is the node's status now; prev gives the conditions'
// transition times.
func (a *Agent) computeStatus(ctx context.Context, prev *v1.NodeStatus) *v1.NodeStatus {
	capacity := map[string]string{
		"cpu":    strconv.Itoa(goruntime.NumCPU()),
		"memory": "0",
		"pods":   strconv.Itoa(a.cfg.MaxPods),
	}
	if mem, err := memTotal(); err == nil {
		capacity["memory"] = strconv.FormatInt(mem/1024, 10) + "Ki"
	}
	if a.cfg.CPU != "" {
		capacity["cpu"] = a.cfg.CPU
	}
	if a.cfg.Memory != "" {
		capacity["memory"] = a.cfg.Memory
	}
	// ephemeral-storage: the root dir's file system (pod dirs, emptyDirs,
	// logs), so that pods requesting it can be scheduled and the
	// scheduler counts their requests against it. Allocatable is the
	// same (Kubernetes subtracts the reserved and the nodefs eviction
	// threshold; no memory threshold is subtracted here either).
	if a.cfg.RootDir != "" {
		if n, err := diskCapacity(existingParent(a.cfg.RootDir)); err == nil && n > 0 {
			capacity["ephemeral-storage"] = strconv.FormatInt(n/1024, 10) + "Ki"
		}
	}
	allocatable := map[string]string{}
	for k, v := range capacity {
		allocatable[k] = v
	}
	info := systemInfo(a.cfg.KubeletVersion)
	st := &v1.NodeStatus{
		Capacity:    capacity,
		Allocatable: allocatable,
		Addresses: []*v1.NodeAddress{
			{Type: "InternalIP", Address: a.cfg.NodeIP.String()},
			{Type: "Hostname", Address: a.cfg.Hostname},
		},
		NodeInfo: info,
	}
	now := a.now()
	var conds []*v1.Condition
	if prev != nil {
		conds = prev.Conditions
	}
	ready, reason, msg := true, "KubeletReady", "kubelet is posting ready status"
	v, rtErr := a.rt.Version(ctx)
	if rtErr != nil {
		ready, reason, msg = false, "ContainerRuntimeNotReady", "container runtime is down: "+rtErr.Error()
	} else {
		info.ContainerRuntimeVersion = v.String()
		if imgs, err := a.rt.ListImages(ctx); err == nil {
			st.Images = nodeImages(imgs)
		}
	}
	if ready {
		if err := a.network(ctx); err != nil {
			ready, reason, msg = false, "NetworkPluginNotReady", "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:"+err.Error()
		}
	}
	if !ready && prev != nil {
		// Keep the runtime version from before so nodeInfo does not blink.
		info.ContainerRuntimeVersion = prev.GetNodeInfo().GetContainerRuntimeVersion()
		st.Images = prev.GetImages()
	}
	memPressure, memReason, memMsg := false, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"
	diskPressure, diskReason, diskMsg := false, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"
	if p := a.cfg.Pressure; p != nil {
		if yes, why := p.MemoryPressure(); yes {
			memPressure, memReason, memMsg = true, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available: "+why
		}
		if yes, why := p.DiskPressure(); yes {
			diskPressure, diskReason, diskMsg = true, "KubeletHasDiskPressure", "kubelet has disk pressure: "+why
		}
	} else {
		if avail, err := memAvailable(); err == nil && avail < memoryPressureBytes {
			memPressure, memReason, memMsg = true, "KubeletHasInsufficientMemory", fmt.Sprintf("kubelet has insufficient memory available: %d MiB left", avail>>20)
		}
		if a.cfg.RootDir != "" {
			if frac, err := diskAvailable(existingParent(a.cfg.RootDir)); err == nil && frac < diskPressureRatio {
				diskPressure, diskReason, diskMsg = true, "KubeletHasDiskPressure", fmt.Sprintf("kubelet has disk pressure: %.0f%% of the file system of %s available", 100*frac, a.cfg.RootDir)
			}
		}
	}
	st.Conditions = []*v1.Condition{
		nodeCondition(conds, "Ready", ready, reason, msg, now),
		nodeCondition(conds, "MemoryPressure", memPressure, memReason, memMsg, now),
		nodeCondition(conds, "DiskPressure", diskPressure, diskReason, diskMsg, now),
		nodeCondition(conds, "PIDPressure", false, "KubeletHasSufficientPID", "kubelet has sufficient PID available", now),
	}
	return st
}

// nodeCondition builds a condition, keeping its transition time (and last
// heartbeat) from prev when the status did not change.
func nodeCondition(prev []*v1.Condition, typ string, status bool, reason, msg string, now time.Time) *v1.Condition {
	s := "False"
	if status {
		s = "True"
	}
	c := &v1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, LastTransitionTime: timestampNow(now)}
	for _, p := range prev {
		if p.Type == typ && p.Status == s {
			c.LastTransitionTime = p.LastTransitionTime
			c.LastHeartbeatTime = p.LastHeartbeatTime
		}
	}
	return c
}

func nodeImages(imgs []runtime.ImageStatus) []*v1.ContainerImage {
	byID := map[string]*v1.ContainerImage{}
	var out []*v1.ContainerImage
	for _, i := range imgs {
		ci := byID[i.ID]
		if ci == nil {
			ci = &v1.ContainerImage{SizeBytes: i.Size}
			byID[i.ID] = ci
			out = append(out, ci)
		}
		ci.Names = append(ci.Names, i.Ref)
	}
	for _, ci := range out {
		sort.Strings(ci.Names)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SizeBytes != out[j].SizeBytes {
			return out[i].SizeBytes > out[j].SizeBytes
		}
		return out[i].Names[0] < out[j].Names[0]
	})
	if len(out) > maxImages {
		out = out[:maxImages]
	}
	return out
}

func existingParent(p string) string {
	for {
		if _, err := os.Stat(p); err == nil || p == "/" || p == "." {
			return p
		}
		p = parentDir(p)
	}
}
