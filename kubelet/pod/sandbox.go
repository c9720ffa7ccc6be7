package pod

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/kubelet/network"
	"github.com/tugboat/tugboat/kubelet/runtime"
)

// A pod's sandbox is made in this order, so that a crash at any point
// leaves something housekeeping can find and undo: the network namespace
// (its name starts with the pod's UID), the runtime's sandbox record (which
// names the namespace), CNI ADD (keyed by the sandbox ID), the /etc files.
// Teardown is the reverse: stop the sandbox, CNI DEL, delete the
// namespace, remove the sandbox record.

// sandboxInfo is the current sandbox and the pod's address in it.
type sandboxInfo struct {
	runtime.SandboxStatus
	IP netip.Addr
	// net, for a sandbox this sync made, is its network being set up in
	// the background (CNI ADD, /etc files) while the first containers are
	// created; containers start only once it is up (networkUp).
	net *pendingNetwork
	// failed: the network could not be set up; the sandbox was removed.
	failed bool
}

type pendingNetwork struct {
	done chan struct{}
	ip   netip.Addr
	err  error
}

// wait waits for the background network setup.
func (sb *sandboxInfo) wait() error {
	if sb.net == nil {
		return nil
	}
	<-sb.net.done
	if sb.net.err != nil {
		return sb.net.err
	}
	sb.IP = sb.net.ip
	return nil
}

func podNetwork(id, nsPath string, pod runtime.PodRef, ports []network.PortMapping) network.PodNetwork {
	return network.PodNetwork{ID: id, NetNSPath: nsPath, Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, PortMappings: ports}
}

func podRef(pod *v1.Pod) runtime.PodRef {
	m := pod.GetMetadata()
	return runtime.PodRef{Namespace: m.GetNamespace(), Name: m.GetName(), UID: m.GetUid()}
}

// hostPorts are the pod's hostPort mappings for the portmap plugin.
func hostPorts(pod *v1.Pod) []network.PortMapping {
	var out []network.PortMapping
	for _, c := range pod.GetSpec().GetContainers() {
		for _, p := range c.GetPorts() {
			if p.HostPort == 0 {
				continue
			}
			out = append(out, network.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: strings.ToLower(p.Protocol), HostIP: p.HostIp})
		}
	}
	return out
}

// sandboxLabels are the pod's labels (but the runtime's reserved keys)
// and the node's.
func sandboxLabels(pod *v1.Pod, node string) map[string]string {
	out := map[string]string{}
	for k, v := range pod.GetMetadata().GetLabels() {
		if !strings.HasPrefix(k, runtime.ReservedLabelPrefix) {
			out[k] = v
		}
	}
	out[LabelNode] = node
	return out
}

// runtimePorts are hostPorts for a runtime that runs portmap itself.
func runtimePorts(ps []network.PortMapping) []runtime.PortMapping {
	var out []runtime.PortMapping
	for _, p := range ps {
		out = append(out, runtime.PortMapping{HostPort: p.HostPort, ContainerPort: p.ContainerPort, Protocol: p.Protocol, HostIP: p.HostIP})
	}
	return out
}

func podHostname(pod *v1.Pod) string {
	h := pod.GetSpec().GetHostname()
	if h == "" {
		h = pod.GetMetadata().GetName()
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h
}

func randSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// netnsName is the pinned namespace's file name: the pod UID first, so
// housekeeping can tell whose it is.
func netnsName(uid string) string { return uid + "_" + randSuffix() }

// uidOfNetNS returns the pod UID a namespace file name starts with.
func uidOfNetNS(name string) string {
	uid, _, _ := strings.Cut(name, "_")
	return uid
}

// createSandbox makes the pod's sandbox and network.
func (w *worker) createSandbox(ctx context.Context, pod *v1.Pod, attempt uint32) (*sandboxInfo, error) {
	m := w.m
	ref := podRef(pod)
	hostNet := pod.GetSpec().GetHostNetwork()
	hostname := podHostname(pod)
	var nsPath string
	if hostNet {
		hostname = m.cfg.NodeName // the runtime puts the containers in the node's network namespace
	} else {
		var err error
		if nsPath, err = m.net.CreateNetNS(netnsName(ref.UID)); err != nil {
			return nil, fmt.Errorf("network namespace: %w", err)
		}
	}
	dns, err := m.dnsConfig(pod)
	if err != nil {
		if !hostNet {
			_ = m.net.DeleteNetNS(nsPath)
		}
		return nil, err
	}
	userns, err := m.podUserNamespace(pod)
	if err != nil {
		if !hostNet {
			_ = m.net.DeleteNetNS(nsPath)
		}
		return nil, err
	}
	etcDir := m.cfg.etcDir(ref.UID)
	cfg := runtime.SandboxConfig{
		UserNamespace: userns,
		Resources:     podCgroupResources(pod.GetSpec()),
		Pod:           ref,
		Attempt:       attempt,
		Hostname:      hostname,
		NetNSPath:     nsPath,
		HostNetwork:   hostNet,
		EtcFiles:      runtime.EtcFilesIn(etcDir),
		Sysctls:       podSysctls(pod),
		Privileged:    podPrivileged(pod),
		// The pod's labels, as Kubernetes gives them to the sandbox
		// (crictl pods --label, crictl inspectp).
		Labels: sandboxLabels(pod, m.cfg.NodeName),
		// For a runtime that runs the pod network itself (CRI).
		DNS:          &dns,
		PortMappings: runtimePorts(hostPorts(pod)),
		LogDirectory: m.cfg.PodDir(ref.UID),
	}
	start := time.Now()
	id, err := m.rt.RunPodSandbox(ctx, cfg)
	logStep(w.log, "sandbox made", start, err, "sandbox", id)
	if err != nil {
		if !hostNet {
			_ = m.net.DeleteNetNS(nsPath)
		}
		if errors.Is(err, runtime.ErrUserNamespacesUnsupported) {
			// Kubernetes' kubelet says this alone (its userns manager
			// refuses before the runtime is called).
			return nil, err
		}
		return nil, fmt.Errorf("runtime sandbox: %w", err)
	}
	pn := &pendingNetwork{done: make(chan struct{})}
	if hostNet {
		// No CNI: the pod has the node's addresses.
		ip := m.cfg.NodeIP
		if _, err := runtime.WriteEtcFiles(etcDir, runtime.PodEtc{Hostname: cfg.Hostname, IPs: []string{ip.String()}, DNS: dns, HostAliases: hostAliases(pod)}); err != nil {
			pn.err = fmt.Errorf("pod /etc files: %w", err)
		}
		pn.ip = ip
		close(pn.done)
		return &sandboxInfo{SandboxStatus: runtime.SandboxStatus{ID: id, Config: cfg, State: runtime.SandboxReady}, net: pn}, nil
	}
	setUp := func() {
		defer close(pn.done)
		start := time.Now()
		ip, err := m.net.SetUpPod(ctx, podNetwork(id, nsPath, ref, hostPorts(pod)))
		logStep(w.log, "pod network ready", start, err, "sandbox", id)
		if err != nil {
			pn.err = err
			return
		}
		if _, err := runtime.WriteEtcFiles(etcDir, runtime.PodEtc{Hostname: cfg.Hostname, IPs: []string{ip.String()}, DNS: dns, HostAliases: hostAliases(pod)}); err != nil {
			pn.err = fmt.Errorf("pod /etc files: %w", err)
			return
		}
		pn.ip = ip
	}
	if nsPath == "" {
		// The runtime set the network up in RunPodSandbox: the address
		// is known now, and the /etc files must exist before containers
		// are created (a CRI runtime makes a missing mount source a
		// directory).
		setUp()
	} else {
		go setUp()
	}
	return &sandboxInfo{SandboxStatus: runtime.SandboxStatus{ID: id, Config: cfg, State: runtime.SandboxReady}, net: pn}, nil
}

// doSandbox carries out the plan's sandbox step: adopt the current
// sandbox (with its pod IP), make a new one, or record why there is none.
func (r *syncRun) doSandbox(ctx context.Context) {
	w, step := r.w, r.plan.sandbox
	switch {
	case step.current != nil:
		r.sb = w.sandboxInfo(*step.current)
	case step.wait != nil:
		r.sandboxWait = step.wait
	case step.refuse != "":
		r.sandboxFailed("NetworkNotReady", step.refuse)
	case step.create:
		if len(r.plan.stale) > 0 && needsRun(r.in.pod, r.in.state) {
			// As Kubernetes says when a pod's sandbox died (crictl stopp).
			w.m.rec.Eventf(r.in.pod, eventNormal, "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
		}
		sb, err := w.createSandbox(ctx, r.in.pod, step.attempt)
		if err != nil {
			r.sandboxFailedErr(err)
			return
		}
		w.m.sandboxBackoff.reset(w.uid + "/sandbox")
		r.sb = sb
	}
}

// sandboxInfo is an existing sandbox with the pod's address in it: the
// node's for hostNetwork, else the one this worker saw, the network's
// cache of the last CNI ADD, or the last status's.
func (w *worker) sandboxInfo(sb runtime.SandboxStatus) *sandboxInfo {
	info := &sandboxInfo{SandboxStatus: sb}
	if sb.Config.HostNetwork {
		info.IP = w.m.cfg.NodeIP
	} else if ip, ok := w.ips[sb.ID]; ok {
		info.IP, _ = parseAddr(ip)
	} else if ip, ok := w.m.net.PodIP(podNetwork(sb.ID, sb.Config.NetNSPath, sb.Config.Pod, nil)); ok {
		info.IP = ip
		w.ips[sb.ID] = ip.String()
	} else if ip, err := parseAddr(w.status.GetPodIp()); err == nil {
		info.IP = ip
	}
	return info
}

// sandboxFailedErr records a sandbox that could not be made.
func (r *syncRun) sandboxFailedErr(err error) {
	reason, msg := "FailedCreatePodSandbox", err.Error()
	if errors.Is(err, network.ErrNotReady) {
		reason = "NetworkNotReady"
	}
	if errors.Is(err, runtime.ErrSandboxImage) {
		c := r.w.m.cfg
		msg += fmt.Sprintf("; import it with `tugctl image import pause.tar --node %s` (`go run ./hack/mkimage -o pause.tar pause` builds it) or drop the tarball into %s/", c.NodeName, c.ImportDir)
	}
	r.sandboxFailed(reason, msg)
}

// sandboxFailed records a sandbox that could not be made (or was not
// tried): event, back-off, and the reason the pod's status shows.
func (r *syncRun) sandboxFailed(reason, msg string) {
	w := r.w
	key := w.uid + "/sandbox"
	w.m.rec.Eventf(r.in.pod, eventWarning, "FailedCreatePodSandbox", "Failed to create pod sandbox: %s", msg)
	w.m.sandboxBackoff.next(key, w.m.now())
	w.setSandboxError(msg)
	_, until := w.m.sandboxBackoff.inBackoffSinceUpdate(key)
	r.sandboxWait = &waiting{Reason: reason, Message: msg, Until: until}
	r.wakeAt(until)
}

func (w *worker) setSandboxError(msg string) {
	w.m.mu.Lock()
	w.m.sandboxErrors[w.uid] = msg
	w.m.mu.Unlock()
}

func (w *worker) lastSandboxError() string {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	return w.m.sandboxErrors[w.uid]
}

// networkUp waits for a new sandbox's network. If it failed, the sandbox
// (with any container already created in it) is removed and the failure
// recorded like any failed sandbox; it reports whether the network is up.
func (r *syncRun) networkUp(ctx context.Context) bool {
	sb := r.sb
	if sb.failed {
		return false
	}
	if err := sb.wait(); err != nil {
		sb.failed = true
		r.w.teardownQuietly(ctx, sb.SandboxStatus)
		r.sandboxFailedErr(err)
		return false
	}
	r.w.ips[sb.ID] = sb.IP.String()
	sb.net = nil
	return true
}

func (w *worker) teardownQuietly(ctx context.Context, sb runtime.SandboxStatus) {
	if err := teardownSandbox(context.WithoutCancel(ctx), w.m.rt, w.m.net, sb); err != nil {
		w.log.Warn("undoing a half-made sandbox", "sandbox", sb.ID, "err", err)
	}
}

// teardownSandbox stops a sandbox (killing its containers), runs CNI DEL,
// deletes its network namespace and removes the sandbox record with its
// containers. Idempotent.
func teardownSandbox(ctx context.Context, rt runtime.Runtime, net Network, sb runtime.SandboxStatus) error {
	if err := releaseSandbox(ctx, rt, net, sb); err != nil {
		return err
	}
	if err := rt.RemovePodSandbox(ctx, sb.ID); err != nil {
		return fmt.Errorf("remove sandbox %s: %w", sb.ID, err)
	}
	return nil
}

// releaseSandbox stops a sandbox and gives back its network (CNI DEL,
// netns), keeping the record and its exited containers (a terminal pod's
// statuses and logs stay readable).
func releaseSandbox(ctx context.Context, rt runtime.Runtime, net Network, sb runtime.SandboxStatus) error {
	if err := rt.StopPodSandbox(ctx, sb.ID); err != nil {
		return fmt.Errorf("stop sandbox %s: %w", sb.ID, err)
	}
	if sb.Config.HostNetwork {
		return nil // the node's network: nothing of the pod's to give back
	}
	var errs []error
	if err := net.TearDownPod(ctx, podNetwork(sb.ID, sb.Config.NetNSPath, sb.Config.Pod, nil)); err != nil {
		errs = append(errs, fmt.Errorf("CNI DEL for sandbox %s: %w", sb.ID, err))
	} else if sb.Config.NetNSPath != "" {
		if err := net.DeleteNetNS(sb.Config.NetNSPath); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dnsConfig is the pod's resolv.conf, as Kubernetes makes it: the
// cluster DNS for ClusterFirst (the default) and ClusterFirstWithHostNet,
// the node's own resolv.conf for Default, for ClusterFirst with
// hostNetwork, or when no cluster DNS is configured; nothing for None.
// spec.dnsConfig is merged in last (mergeDNSConfig).
func (m *Manager) dnsConfig(pod *v1.Pod) (runtime.DNSConfig, error) {
	policy := pod.GetSpec().GetDnsPolicy()
	clusterFirst := policy == "ClusterFirstWithHostNet" ||
		(policy == "" || policy == "ClusterFirst") && !pod.GetSpec().GetHostNetwork() // as Kubernetes: host network means the node's resolv.conf
	var base runtime.DNSConfig
	switch {
	case policy == "None":
	case clusterFirst && len(m.cfg.ClusterDNS) > 0:
		ns := pod.GetMetadata().GetNamespace()
		d := m.cfg.ClusterDomain
		servers := make([]string, len(m.cfg.ClusterDNS))
		for i, a := range m.cfg.ClusterDNS {
			servers[i] = a.String()
		}
		base = runtime.DNSConfig{
			Servers:  servers,
			Searches: []string{ns + ".svc." + d, "svc." + d, d},
			Options:  []string{"ndots:5"},
		}
	default:
		var err error
		if base, err = hostResolvConf("/etc/resolv.conf"); err != nil {
			return base, err
		}
	}
	return mergeDNSConfig(base, pod.GetSpec().GetDnsConfig()), nil
}

// mergeDNSConfig adds the pod's dnsConfig to what its policy gives, as
// Kubernetes does: nameservers appended (at most 3 kept), search domains
// appended without repeats (at most 32), options merged by name (the
// pod's value wins).
func mergeDNSConfig(base runtime.DNSConfig, dc *v1.PodDNSConfig) runtime.DNSConfig {
	if dc == nil {
		return base
	}
	out := runtime.DNSConfig{Servers: append(slices.Clone(base.Servers), dc.Nameservers...)}
	if len(out.Servers) > 3 {
		out.Servers = out.Servers[:3]
	}
	seen := map[string]bool{}
	for _, s := range append(slices.Clone(base.Searches), dc.Searches...) {
		if !seen[s] {
			seen[s] = true
			out.Searches = append(out.Searches, s)
		}
	}
	if len(out.Searches) > 32 {
		out.Searches = out.Searches[:32]
	}
	var names []string
	opts := map[string]string{}
	for _, o := range base.Options {
		name, _, _ := strings.Cut(o, ":")
		if _, ok := opts[name]; !ok {
			names = append(names, name)
		}
		opts[name] = o
	}
	for _, o := range dc.Options {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		if _, ok := opts[o.Name]; !ok {
			names = append(names, o.Name)
		}
		opts[o.Name] = s
	}
	for _, n := range names {
		out.Options = append(out.Options, opts[n])
	}
	return out
}

// hostAliases are the pod's spec.hostAliases for its /etc/hosts.
func hostAliases(pod *v1.Pod) []runtime.HostAlias {
	var out []runtime.HostAlias
	for _, a := range pod.GetSpec().GetHostAliases() {
		out = append(out, runtime.HostAlias{IP: a.Ip, Hostnames: a.Hostnames})
	}
	return out
}

// hostResolvConf reads the node's resolv.conf (for dnsPolicy Default).
func hostResolvConf(path string) (runtime.DNSConfig, error) {
	var d runtime.DNSConfig
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			d.Servers = append(d.Servers, fields[1])
		case "search", "domain":
			d.Searches = append(d.Searches, fields[1:]...)
		case "options":
			d.Options = append(d.Options, fields[1:]...)
		}
	}
	return d, s.Err()
}
