package nftables

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/internal/netns"
)

// DefaultTable is the table the proxy owns.
const DefaultTable = "tugboat"

// Source is where the datapath reads what to program: the proxy's
// informer caches. Objects are shared; the datapath never mutates them.
type Source interface {
	// Service returns the Service of key "namespace/name".
	Service(key string) (*v1.Service, bool)
	// EndpointSlices returns the EndpointSlices of the Service of key
	// "namespace/name" (label kubernetes.io/service-name).
	EndpointSlices(key string) []*v1.EndpointSlice
	// ServiceKeys lists the keys of every Service.
	ServiceKeys() []string
}

// Config configures a Datapath.
type Config struct {
	// Table is the nftables table (family ip) the datapath owns and
	// rebuilds at will (DefaultTable).
	Table string
	// ClusterCIDR: Service traffic from outside it is masqueraded
	// (--cluster-cidr). Required.
	ClusterCIDR netip.Prefix
	// NodeName is the proxy's node: endpoints whose nodeName it is are the
	// local ones of externalTrafficPolicy Local (--node-name).
	NodeName string
	// NetNS is an open file descriptor of the network namespace to
	// program; 0: the process's own.
	NetNS int
	// Source is read on every sync. Required.
	Source Source
	// FullSyncPeriod: the table is rebuilt from scratch this often, which
	// repairs any change made to it behind the proxy's back (default 10m;
	// negative: never).
	FullSyncPeriod time.Duration
	// Registry receives the datapath's metrics (nil: unregistered).
	Registry prometheus.Registerer
	Logger   *slog.Logger
}

// Validate names the first bad field.
func (c *Config) Validate() error {
	if !c.ClusterCIDR.IsValid() || !c.ClusterCIDR.Addr().Is4() {
		return errors.New("--cluster-cidr: required, an IPv4 CIDR such as 10.244.0.0/16")
	}
	if c.Source == nil {
		return errors.New("nftables datapath: Source: required")
	}
	if len(c.Table) > 255 {
		return fmt.Errorf("nftables datapath: Table %q: longer than 255 bytes", c.Table)
	}
	if c.NetNS < 0 {
		return fmt.Errorf("nftables datapath: NetNS %d: not a file descriptor", c.NetNS)
	}
	return nil
}

// Datapath keeps the nftables table equal to what the Source says. Tell it
// what changed with Changed; Run programs it.
type Datapath struct {
	cfg     Config
	tbl     *table
	log     *slog.Logger
	metrics *metrics

	mu    sync.Mutex
	dirty map[string]time.Time // service key -> first change not yet programmed
	wake  chan struct{}

	// Owned by Run.
	applied     map[string]*Ruleset // service key -> its part of the table
	ipOwner     map[IPPortKey]string
	portOwner   map[PortKey]string
	hairpinRefs map[netip.Addr]int

	// local is what the last successful sync programmed for the
	// externalTrafficPolicy Local Services: service key -> its distinct
	// local endpoints in the external chains (read by the health check).
	local atomic.Pointer[map[string]int]

	// onSync, if set (tests), is called after every successful sync.
	onSync func()
}

// LocalEndpoints is the number of distinct local endpoints (address and
// port) that the last successful sync put in the external chains of the
// externalTrafficPolicy Local Service key: what a nodePort or
// load-balancer address of it reaches on this node now, not what the
// caches say will be programmed. 0 before the first sync. Safe from any
// goroutine.
func (d *Datapath) LocalEndpoints(key string) int {
	if m := d.local.Load(); m != nil {
		return (*m)[key]
	}
	return 0
}

// New validates cfg and makes a Datapath.
func New(cfg Config) (*Datapath, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	if cfg.FullSyncPeriod == 0 {
		cfg.FullSyncPeriod = 10 * time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m, err := newMetrics(cfg.Registry)
	if err != nil {
		return nil, err
	}
	return &Datapath{
		cfg: cfg, tbl: &table{Handle{Name: cfg.Table, NetNS: cfg.NetNS}}, log: cfg.Logger.With("datapath", "nftables", "table", cfg.Table),
		metrics: m, dirty: map[string]time.Time{}, wake: make(chan struct{}, 1),
	}, nil
}

// Changed records that the Service or Endpoints of key changed now. It
// never blocks.
func (d *Datapath) Changed(key string) {
	d.mu.Lock()
	if _, ok := d.dirty[key]; !ok {
		d.dirty[key] = time.Now()
	}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *Datapath) takeDirty() map[string]time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.dirty
	d.dirty = map[string]time.Time{}
	return out
}

// putBack returns keys whose programming failed, keeping their first seen time.
func (d *Datapath) putBack(keys map[string]time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, t := range keys {
		if have, ok := d.dirty[k]; !ok || t.Before(have) {
			d.dirty[k] = t
		}
	}
}

// Run programs the table until ctx ends. The Source must be synced first:
// Run starts with a full sync of everything it holds (replacing whatever
// the table held, from an earlier run or not), then applies changes as
// they come, every batch one transaction. A failed batch is retried with
// backoff as a full sync. The table is left in place when ctx ends (the
// rules keep working while the proxy restarts); Cleanup removes it.
func (d *Datapath) Run(ctx context.Context) error {
	if err := d.ensureBridgeNetfilter(); err != nil {
		d.log.Warn("br_netfilter is not available: a pod reaching a Service whose endpoint is on the same node bridge gets no reply (modprobe br_netfilter)", "err", err)
	}
	full, initial := true, true
	backoff := 100 * time.Millisecond
	var fullTimer <-chan time.Time
	if d.cfg.FullSyncPeriod > 0 {
		t := time.NewTicker(d.cfg.FullSyncPeriod)
		defer t.Stop()
		fullTimer = t.C
	}
	for {
		keys := d.takeDirty()
		var err error
		switch {
		case full:
			err = d.fullSync(keys, !initial)
		case len(keys) > 0:
			err = d.partialSync(keys)
		}
		if err != nil {
			d.putBack(keys)
			d.log.Error("programming the table failed; retrying with a full sync", "err", err, "retryIn", backoff)
			full = true
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 10*time.Second)
			continue
		}
		full, initial, backoff = false, false, 100*time.Millisecond
		if d.onSync != nil {
			d.onSync()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-fullTimer:
			full = true
		}
	}
}

// build is the ruleset of one Service, nil if it is gone or has no rules.
func (d *Datapath) build(key string) *Ruleset {
	svc, ok := d.cfg.Source.Service(key)
	if !ok {
		return nil
	}
	sps, err := ServicePorts(svc, d.cfg.Source.EndpointSlices(key), d.cfg.NodeName)
	if err != nil {
		d.log.Warn("skipping service", "service", key, "err", err)
		return nil
	}
	if len(sps) == 0 {
		return nil
	}
	return Build(sps, Options{ClusterCIDR: d.cfg.ClusterCIDR})
}

func (d *Datapath) fullSync(dirty map[string]time.Time, observe bool) error {
	start := time.Now()
	d.applied = map[string]*Ruleset{}
	d.ipOwner, d.portOwner, d.hairpinRefs = map[IPPortKey]string{}, map[PortKey]string{}, map[netip.Addr]int{}
	all := NewRuleset()
	keys := d.cfg.Source.ServiceKeys()
	slices.Sort(keys)
	for _, key := range keys {
		rs := d.build(key)
		if rs == nil {
			continue
		}
		d.claim(key, rs)
		all.Merge(rs)
		d.applied[key] = rs
		for ip := range rs.Hairpin {
			d.hairpinRefs[ip]++
		}
	}
	if err := d.tbl.recreate(all); err != nil {
		d.metrics.syncErrors.WithLabelValues("full").Inc()
		return fmt.Errorf("full sync of %d services: %w", len(keys), err)
	}
	d.done("full", start, dirty, len(keys), observe)
	return nil
}

func (d *Datapath) partialSync(dirty map[string]time.Time) error {
	start := time.Now()
	total := &Changes{}
	changed := map[string]time.Time{} // keys whose rules had to change
	for _, key := range slices.Sorted(maps.Keys(dirty)) {
		old := d.applied[key]
		d.release(key, old)
		rs := d.build(key)
		d.claim(key, rs)
		ch := Diff(old, rs)
		if !ch.Empty() {
			changed[key] = dirty[key]
		}
		ch.AddHairpin, ch.DelHairpin = d.countHairpin(ch.AddHairpin, ch.DelHairpin)
		total.Append(ch)
		if rs == nil {
			delete(d.applied, key)
		} else {
			d.applied[key] = rs
		}
	}
	if !total.Empty() {
		if err := d.tbl.apply(total); err != nil {
			d.metrics.syncErrors.WithLabelValues("partial").Inc()
			return fmt.Errorf("updating %d services: %w", len(dirty), err)
		}
	}
	d.clearStaleUDP(total.StaleUDP)
	d.done("partial", start, changed, len(dirty), true)
	return nil
}

// done records a successful sync: its duration, the programming latency
// of every change it put in the kernel (changed: key -> when it was seen;
// a change that needed no new rules, such as a resync, is not one) and the
// table's size.
func (d *Datapath) done(mode string, start time.Time, changed map[string]time.Time, services int, observe bool) {
	now := time.Now()
	d.metrics.syncDuration.WithLabelValues(mode).Observe(now.Sub(start).Seconds())
	if observe {
		for _, seen := range changed {
			d.metrics.latency.Observe(now.Sub(seen).Seconds())
		}
	}
	var ports, eps, rejected int
	for _, rs := range d.applied {
		ports += len(rs.ServiceIPs) + len(rs.RejectIPs)
		rejected += len(rs.RejectIPs)
		for _, c := range rs.Chains {
			if c.Cluster == "" { // an external chain's endpoints are its service chain's too
				eps += len(c.Endpoints)
			}
		}
	}
	local := map[string]int{}
	for key, rs := range d.applied {
		seen := map[Endpoint]struct{}{}
		for _, c := range rs.Chains {
			if c.Cluster != "" { // an external chain: the local endpoints
				for _, e := range c.Endpoints {
					seen[e] = struct{}{}
				}
			}
		}
		if len(seen) > 0 {
			local[key] = len(seen)
		}
	}
	d.local.Store(&local)
	d.metrics.servicePorts.Set(float64(ports))
	d.metrics.endpoints.Set(float64(eps))
	d.metrics.rejecting.Set(float64(rejected))
	d.metrics.lastSync.SetToCurrentTime()
	lvl := slog.LevelDebug
	if mode == "full" {
		lvl = slog.LevelInfo
	}
	d.log.Log(context.Background(), lvl, "table synced", "mode", mode, "services", services, "changed", len(changed),
		"servicePorts", ports, "endpoints", eps, "took", now.Sub(start))
}

// ensureBridgeNetfilter turns on net.bridge.bridge-nf-call-iptables in
// the datapath's namespace, so that replies bridged between two pods of
// one node go through conntrack and are un-DNATed.
func (d *Datapath) ensureBridgeNetfilter() error {
	return netns.Do(d.cfg.NetNS, func() error {
		p := filepath.Join("/proc/sys/net/bridge", "bridge-nf-call-iptables")
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(b) > 0 && b[0] == '1' {
			return nil
		}
		return os.WriteFile(p, []byte("1"), 0o644)
	})
}

// Cleanup removes the table. It reports whether there was one.
func Cleanup(tableName string, netnsFd int) (bool, error) {
	if tableName == "" {
		tableName = DefaultTable
	}
	return (&table{Handle{Name: tableName, NetNS: netnsFd}}).Remove()
}

// TableExists reports whether the table is there (for tests and --cleanup).
func TableExists(tableName string, netnsFd int) (bool, error) {
	if tableName == "" {
		tableName = DefaultTable
	}
	return (&table{Handle{Name: tableName, NetNS: netnsFd}}).Exists()
}
