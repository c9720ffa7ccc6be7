// Package netpol enforces NetworkPolicies (networking.k8s.io/v1) on one
// node, in nftables, for the pods of that node.
//
// Who: the node's proxy runs this agent. The proxy already owns the
// node's nftables datapath, watches the API with the node's identity and
// runs on every node whatever the container runtime; the kubelet knows
// only its own pods, while policies name peers anywhere in the cluster.
// The agent owns one table, `ip tugboat-policy` (the Service datapath
// owns `ip tugboat`; neither touches the other's), so each can rebuild
// its table whole without disturbing the other.
//
// Where in the kernel: a pod's traffic to another pod, on this node or
// another, and traffic from elsewhere to a local pod, crosses the forward
// hook (pods on one bridge too: the proxy turns bridge-nf-call-iptables
// on); a pod's traffic to the node itself (the cluster DNS on the node's
// loopback, NodePorts) crosses the input hook. Service traffic is judged
// after its DNAT (the proxy's nat chains run at dstnat, before filter),
// so policies see the endpoint pod's address, as in Kubernetes. Traffic
// the node itself starts (kubelet probes) is not filtered.
//
//	chain egress       { forward, filter;   ct state established,related accept; ip saddr vmap @egress-pods }
//	chain egress-local { input,   filter;   the same }
//	chain ingress      { forward, filter+1; ct state established,related accept; ip daddr vmap @ingress-pods }
//	chain pod-in/NS/POD  { jump np-in/NS/POLICY ...; counter drop }     a local pod some Ingress policy selects
//	chain np-in/NS/POLICY { ip saddr { peers } tcp dport 80 accept ... } what the policy allows
//
// The cluster DNS is served by each node's proxy, not by a pod; policies
// see it as a pod kube-system/kube-dns with label k8s-app=kube-dns and
// named ports dns (UDP 53) and dns-tcp (TCP 53), as CoreDNS's pods are,
// so the Kubernetes documentation's "allow DNS" egress rules work as
// written. Without such a rule an egress-isolated pod cannot resolve.
//
// Loop: the proxy's informers (pods, namespaces, policies) call Changed;
// Run rebuilds the node's whole Ruleset from the caches (a pure function,
// package model.go), diffs it with what it applied and writes only the
// difference in one netlink transaction: a pod's label change rewrites
// the chains of the policies whose peers it enters or leaves. At start and
// after a failed write the table is recreated whole in one transaction.
//
// Contract: the table outlives the agent (policies keep holding across a
// proxy restart; the next start replaces it); Cleanup removes it.
package netpol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tugboat/tugboat/api/netpolicy"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// DefaultTable is the table the agent owns.
const DefaultTable = "tugboat-policy"

// Source is the agent's view of the proxy's informer caches; objects are
// shared and never mutated.
type Source interface {
	Pods() []*v1.Pod
	Namespace(name string) (*v1.Namespace, bool)
	NetworkPolicies() []*v1.NetworkPolicy
}

// Config configures an Agent.
type Config struct {
	// NodeName: the pods enforced here are this node's. Required.
	NodeName string
	// ClusterDNS is the cluster DNS address (seen by policies as the
	// kube-system/kube-dns pod); invalid: none.
	ClusterDNS netip.Addr
	// Table (DefaultTable) and NetNS (0: the process's own namespace).
	Table string
	NetNS int
	// Source is read on every sync. Required.
	Source Source
	// Registry receives the metrics (nil: unregistered).
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Agent keeps the policy table equal to what the Source says.
type Agent struct {
	cfg     Config
	tbl     *table
	log     *slog.Logger
	metrics *metrics

	mu    sync.Mutex
	since time.Time // first change not yet programmed (zero: none)
	wake  chan struct{}

	appliedMu sync.Mutex
	applied   *Ruleset

	// onSync, if set (tests, benchmarks), is called after every sync.
	onSync func()
}

// New validates cfg and makes an Agent.
func New(cfg Config) (*Agent, error) {
	if cfg.NodeName == "" {
		return nil, errors.New("network policy agent: NodeName: required (--node-name)")
	}
	if cfg.Source == nil {
		return nil, errors.New("network policy agent: Source: required")
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Agent{cfg: cfg, tbl: newTable(cfg.Table, cfg.NetNS), log: cfg.Logger.With("datapath", "networkpolicy", "table", cfg.Table),
		wake: make(chan struct{}, 1)}
	m, err := newMetrics(cfg.Registry, a)
	if err != nil {
		return nil, err
	}
	a.metrics = m
	return a, nil
}

// Changed records that a pod, namespace or policy changed now. It never
// blocks.
func (a *Agent) Changed() {
	a.mu.Lock()
	if a.since.IsZero() {
		a.since = time.Now()
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *Agent) takeSince() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.since
	a.since = time.Time{}
	return t
}

func (a *Agent) putBack(t time.Time) {
	if t.IsZero() {
		return
	}
	a.mu.Lock()
	if a.since.IsZero() || t.Before(a.since) {
		a.since = t
	}
	a.mu.Unlock()
}

// Input is the current snapshot of the Source as Build's input.
func (a *Agent) Input() Input {
	in := Input{Node: a.cfg.NodeName}
	for _, np := range a.cfg.Source.NetworkPolicies() {
		p, err := netpolicy.Compile(np)
		if err != nil { // validation makes this unreachable for stored policies
			a.log.Warn("skipping network policy", "networkpolicy", v1.Key(np), "err", err)
			continue
		}
		in.Policies = append(in.Policies, p)
	}
	for _, pod := range a.cfg.Source.Pods() {
		if e, ok := netpolicy.EndpointOf(pod); ok {
			in.Endpoints = append(in.Endpoints, e)
		}
	}
	if a.cfg.ClusterDNS.IsValid() {
		in.Endpoints = append(in.Endpoints, ClusterDNSEndpoint(a.cfg.ClusterDNS))
	}
	in.Namespaces = func(name string) map[string]string {
		if ns, ok := a.cfg.Source.Namespace(name); ok {
			return ns.GetMetadata().GetLabels()
		}
		return nil
	}
	return in
}

// ClusterDNSEndpoint is the cluster DNS as policies see it.
func ClusterDNSEndpoint(ip netip.Addr) netpolicy.Endpoint {
	return netpolicy.ClusterDNS(ip)
}

// Run programs the table until ctx ends; the Source must be synced. It
// starts by recreating the table, then applies differences as changes
// come; a failed write is retried, with backoff, as a recreation.
func (a *Agent) Run(ctx context.Context) error {
	full := true
	backoff := 100 * time.Millisecond
	for {
		since := a.takeSince()
		start := time.Now()
		rs := Build(a.Input())
		var err error
		mode := "partial"
		changed := false
		if full {
			mode = "full"
			err = a.tbl.recreate(rs)
			changed = true
		} else if ch := Diff(a.applied, rs); !ch.Empty() {
			err = a.tbl.apply(ch)
			changed = true
		}
		if err != nil {
			a.putBack(since)
			a.metrics.syncErrors.WithLabelValues(mode).Inc()
			a.log.Error("programming the network policy table failed; recreating it", "err", err, "retryIn", backoff)
			full = true
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		a.appliedMu.Lock()
		a.applied = rs
		a.appliedMu.Unlock()
		now := time.Now()
		a.metrics.syncDuration.WithLabelValues(mode).Observe(now.Sub(start).Seconds())
		if changed && !since.IsZero() {
			a.metrics.latency.Observe(now.Sub(since).Seconds())
		}
		a.metrics.isolated.WithLabelValues("ingress").Set(float64(len(rs.Ingress)))
		a.metrics.isolated.WithLabelValues("egress").Set(float64(len(rs.Egress)))
		if changed {
			a.log.Debug("network policy table synced", "mode", mode, "chains", len(rs.Chains), "took", now.Sub(start))
		}
		full, backoff = false, 100*time.Millisecond
		if a.onSync != nil {
			a.onSync()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.wake:
		}
	}
}

// Cleanup removes the table; it reports whether there was one.
func Cleanup(tableName string, netnsFd int) (bool, error) {
	if tableName == "" {
		tableName = DefaultTable
	}
	return newTable(tableName, netnsFd).Remove()
}

// String names the agent in errors.
func (a *Agent) String() string {
	return fmt.Sprintf("network policy agent (table ip %s)", a.cfg.Table)
}
