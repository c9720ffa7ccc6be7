// Command apiserver serves the Tugboat API over gRPC and the Kubernetes API
// over HTTPS (for kubectl and client-go), and is the only component that
// talks to etcd. `apiserver pki init` makes the cluster's
// certificates.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/apiserver"
	"github.com/tugboat/tugboat/apiserver/watchcache"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "pki" && os.Args[2] == "init" {
		component.Main("apiserver pki init", func(context.Context) error { return pkiInit(os.Args[3:]) })
		return
	}
	var cfg apiserver.Config
	var sec securityFlags
	var logs component.LogFlags
	var etcd string
	fs := flag.NewFlagSet("apiserver", flag.ExitOnError)
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:6443", "gRPC listen address host:port")
	fs.StringVar(&cfg.KubeListen, "kube-listen", "127.0.0.1:6444", "Kubernetes HTTP API address host:port for kubectl and client-go (HTTPS, same TLS and authentication as --listen; empty disables)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", "127.0.0.1:9443", "HTTP address for /metrics and /healthz (empty disables)")
	fs.StringVar(&etcd, "etcd-servers", "", "comma-separated external etcd client URLs; empty starts an embedded etcd")
	fs.StringVar(&cfg.DataDir, "data-dir", "/var/lib/tugboat/etcd", "embedded etcd data directory")
	fs.Func("etcd-listen", "removed: the embedded etcd listens only on the unix socket <data-dir>/etcd.sock", func(string) error {
		return fmt.Errorf("--etcd-listen was removed: the embedded etcd listens only on the unix socket <data-dir>/%s, which only the apiserver's user can open (etcdctl --endpoints unix://<data-dir>/%s, as that user)", apiserver.EtcdSocket, apiserver.EtcdSocket)
	})
	fs.DurationVar(&cfg.BookmarkInterval, "bookmark-interval", 10*time.Second, "interval of BOOKMARK events to idle watchers")
	fs.DurationVar(&cfg.CompactionInterval, "compaction-interval", 5*time.Minute, "etcd history compaction interval (negative disables)")
	fs.IntVar(&cfg.WatchCacheSize, "watch-cache-size", 2000, "recent events kept per kind for resuming watchers")
	fs.IntVar(&cfg.WatchQueueSize, "watch-queue-size", 1000, "events a watcher may lag before it is cut off")
	fs.Int64Var(&cfg.WatchQueueBytes, "watch-queue-bytes", watchcache.DefaultQueueBytes, "bytes of queued events a watcher may hold before it is cut off")
	fs.IntVar(&cfg.MaxWatchesPerConnection, "max-watches-per-connection", apiserver.DefaultMaxWatchesPerConnection, "open watches allowed on one connection (beyond: ResourceExhausted; negative: no limit)")
	fs.IntVar(&cfg.MaxWatchesPerUser, "max-watches-per-user", apiserver.DefaultMaxWatchesPerUser, "open watches allowed for one user across its connections (beyond: ResourceExhausted; negative: no limit)")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.96.0.0/16", "range ClusterIPs are allocated from (.1 and .10 are reserved: API and DNS)")
	fs.StringVar(&cfg.NodePortRange, "service-node-port-range", "30000-32767", "range nodePorts are allocated from")
	fs.DurationVar(&cfg.EventTTL, "event-ttl", time.Hour, "how long an Event lives after its last update")
	fs.IntVar(&cfg.MaxConnections, "max-connections", 10000, "client connections open at once over all listeners; more are reset at accept (lowered to what the file limit allows)")
	fs.IntVar(&cfg.MaxRequestsInflight, "max-requests-inflight", 600, "API Priority and Fairness: unary requests executing at once over all priority levels, each level its share of them (leader-election, node-high, system, workload-high, workload-low, global-default, catch-all; system:masters is exempt); the rest wait in their level's queue up to 15 s; negative turns it off")
	fs.IntVar(&cfg.MaxConnectionsPerHost, "max-connections-per-host", 1000, "client connections open at once from one source IP (at most half of --max-connections)")
	fs.DurationVar(&cfg.HandshakeTimeout, "tls-handshake-timeout", 5*time.Second, "close a connection that has not finished its TLS handshake and HTTP/2 preface this long after accept")
	fs.StringVar(&cfg.PodSecurity.Defaults, "pod-security", apiserver.DefaultPodSecurity, "Pod Security policies of namespaces without pod-security.kubernetes.io labels: enforce|warn|audit=privileged|baseline|restricted[:VERSION], comma-separated (modes not named are privileged; \"enforce=privileged\" is Kubernetes' default, no checks)")
	exempt := fs.String("pod-security-exempt-namespaces", "kube-system", "comma-separated namespaces Pod Security does not evaluate (the cluster's own components)")
	sec.register(fs)
	logs.Register(fs)
	_ = fs.Parse(os.Args[1:])
	if etcd != "" {
		cfg.EtcdServers = strings.Split(etcd, ",")
	}
	cfg.PodSecurity.ExemptNamespaces = []string{}
	for _, ns := range strings.Split(*exempt, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			cfg.PodSecurity.ExemptNamespaces = append(cfg.PodSecurity.ExemptNamespaces, ns)
		}
	}
	component.Main("apiserver", func(ctx context.Context) error {
		log, err := logs.Logger("apiserver")
		if err != nil {
			return err
		}
		cfg.Logger = log
		if err := sec.apply(&cfg, log); err != nil {
			return err
		}
		srv, err := apiserver.New(ctx, cfg)
		if err != nil {
			return err
		}
		return srv.Run(ctx)
	})
}

func pkiInit(args []string) error {
	fs := flag.NewFlagSet("apiserver pki init", flag.ExitOnError)
	dir := fs.String("dir", "/etc/tugboat/pki", "where to write the certificates and keys")
	var names pki.InitFlags
	names.Register(fs)
	etcdOnly := fs.Bool("etcd-only", false, "make only the etcd CA and certificates (for a folder made before they existed)")
	existingCA := fs.Bool("existing-ca", false, "sign with the CAs already in --dir (ca.crt/ca.key, etcd/ca.crt/ca.key, copied from another control-plane server) instead of making new ones; the other certificates are made anew, sa.key is kept")
	_ = fs.Parse(args)
	o, err := names.Options(*dir)
	if err != nil {
		return err
	}
	if *existingCA && *etcdOnly {
		return fmt.Errorf("--existing-ca and --etcd-only contradict each other: --etcd-only makes a new etcd CA")
	}
	o.ExistingCA = *existingCA
	if err := initPKI(o, *etcdOnly); err != nil {
		return err
	}
	fmt.Printf("wrote the certificates to %s\n", *dir)
	return nil
}
