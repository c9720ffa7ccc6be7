package proxy

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/tugboat/tugboat/proxy/ingress"
)

// Flags are the proxy's command-line flags as given; Config turns them
// into a Config, naming the flag that is wrong.
type Flags struct {
	NodeName         string
	NodeIP           string
	ClusterCIDR      string
	ClusterDNS       string
	ClusterDomain    string
	UpstreamDNS      string
	ResolvConf       string
	UpstreamTimeout  time.Duration
	MetricsListen    string
	FullSyncPeriod   time.Duration
	Cleanup          bool
	NetworkPolicy    bool
	IngressListen    string
	IngressTLSListen string
}

// Register adds the proxy's flags to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringVar(&f.NodeName, "node-name", host, "this node's Node object name")
	fs.StringVar(&f.NodeIP, "node-ip", "", "this node's address: preferred source of its own traffic to other nodes' pods (empty: the kernel's choice)")
	fs.StringVar(&f.ClusterCIDR, "cluster-cidr", DefaultClusterCIDR, "the pods' address range; Service traffic from outside it is masqueraded")
	fs.StringVar(&f.ClusterDNS, "cluster-dns", DefaultClusterDNS, "address of the cluster DNS server (port 53), added to the node's lo")
	fs.StringVar(&f.ClusterDomain, "cluster-domain", DefaultClusterDomain, "the DNS domain of Services (<svc>.<ns>.svc.<domain>)")
	fs.StringVar(&f.UpstreamDNS, "upstream-dns", "", "comma-separated ip[:port] servers that names outside the cluster domain are forwarded to (default: the nameservers of --resolv-conf)")
	fs.StringVar(&f.ResolvConf, "resolv-conf", DefaultResolvConf, "resolv.conf whose nameservers are the upstreams when --upstream-dns is empty")
	fs.DurationVar(&f.UpstreamTimeout, "upstream-timeout", 2*time.Second, "time for all upstreams to answer one forwarded query before the client gets SERVFAIL")
	fs.StringVar(&f.MetricsListen, "metrics-listen", DefaultMetricsListen, "HTTP address for /metrics, /healthz and /debug/pprof (empty disables)")
	fs.DurationVar(&f.FullSyncPeriod, "full-sync-period", 10*time.Minute, "how often the nftables table is rebuilt whole, repairing changes made behind the proxy's back (negative: never)")
	fs.BoolVar(&f.NetworkPolicy, "network-policy", true, "enforce NetworkPolicies for this node's pods in nftables (table ip tugboat-policy); false when another agent enforces them")
	RegisterIngressFlags(fs, &f.IngressListen, &f.IngressTLSListen)
	fs.BoolVar(&f.Cleanup, "cleanup", false, "remove everything the proxy installed on this node (nftables table, pod CIDR routes, cluster DNS address) and exit")
}

// RegisterIngressFlags adds --ingress-listen and --ingress-tls-listen to
// fs: the proxy's, and the all-in-one binary's (tugboat up), which runs
// the same proxy.
func RegisterIngressFlags(fs *flag.FlagSet, listen, tlsListen *string) {
	fs.StringVar(listen, "ingress-listen", ingress.DefaultListen, "HTTP address Ingresses of class tugboat are served on (empty disables)")
	fs.StringVar(tlsListen, "ingress-tls-listen", ingress.DefaultTLSListen, "HTTPS address Ingresses are served on, certificates chosen by SNI from their kubernetes.io/tls Secrets (empty disables)")
}

// Config parses the flags. The caller sets Client, Registry and Logger.
func (f *Flags) Config() (Config, error) {
	cfg := Config{NodeName: f.NodeName, ClusterDomain: f.ClusterDomain, ResolvConf: f.ResolvConf,
		UpstreamTimeout: f.UpstreamTimeout, MetricsListen: f.MetricsListen, FullSyncPeriod: f.FullSyncPeriod,
		NetworkPolicy: f.NetworkPolicy, IngressListen: f.IngressListen, IngressTLSListen: f.IngressTLSListen}
	var err error
	if cfg.ClusterCIDR, err = netip.ParsePrefix(f.ClusterCIDR); err != nil {
		return cfg, fmt.Errorf("--cluster-cidr %q: %v", f.ClusterCIDR, err)
	}
	if cfg.ClusterDNS, err = netip.ParseAddr(f.ClusterDNS); err != nil {
		return cfg, fmt.Errorf("--cluster-dns %q: %v", f.ClusterDNS, err)
	}
	if f.NodeIP != "" {
		if cfg.NodeIP, err = netip.ParseAddr(f.NodeIP); err != nil {
			return cfg, fmt.Errorf("--node-ip %q: %v", f.NodeIP, err)
		}
	}
	for _, u := range strings.Split(f.UpstreamDNS, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if ip, err := netip.ParseAddr(u); err == nil {
			u = netip.AddrPortFrom(ip, 53).String()
		}
		if _, err := netip.ParseAddrPort(u); err != nil {
			return cfg, fmt.Errorf("--upstream-dns %q: want ip or ip:port", u)
		}
		cfg.UpstreamDNS = append(cfg.UpstreamDNS, u)
	}
	return cfg, nil
}
