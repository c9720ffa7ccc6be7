// Command hollow runs hollow nodes: N real kubelets in one process over
// the simulation backend (package kubelet/hollow), for scale tests and
// benchmarks of a control plane.
//
//	hollow --nodes 5000 --server 127.0.0.1:6443 \
//	    --ca-file pki/ca.crt --ca-key-file pki/ca.key
//
// Each node presents a client certificate of its own (system:node:<name>),
// signed in memory with the cluster CA's key (--ca-key-file; the files
// `apiserver pki init` writes): hollow nodes are as trusted as the CA
// holder who starts them. --metrics-listen serves the process's metrics
// (process_resident_memory_bytes is the RSS of all the nodes) and
// tugboat_hollow_nodes.
package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/api/metricsserver"
	"github.com/tugboat/tugboat/api/pki"
	"github.com/tugboat/tugboat/kubelet/hollow"
)

func main() {
	var (
		cfg           hollow.Config
		logs          component.LogFlags
		caFile, caKey string
		nodeIPs       string
		images        string
		metricsListen string
	)
	fs := flag.NewFlagSet("hollow", flag.ExitOnError)
	logs.Register(fs)
	fs.IntVar(&cfg.Nodes, "nodes", 100, "how many hollow nodes to run")
	fs.StringVar(&cfg.Server, "server", os.Getenv("TUGBOAT_SERVER"), "apiserver gRPC address host:port, or several comma-separated (env TUGBOAT_SERVER)")
	fs.StringVar(&caFile, "ca-file", "", "the cluster CA's certificate: verifies the apiserver and signs the nodes' certificates with --ca-key-file")
	fs.StringVar(&caKey, "ca-key-file", "", "the cluster CA's private key, to sign each node its client certificate (system:node:<name>) in memory")
	fs.StringVar(&cfg.RootDir, "root-dir", filepath.Join(os.TempDir(), "tugboat-hollow"), "each node's root dir is DIR/<name> (pod /etc files and volumes)")
	fs.StringVar(&cfg.NamePrefix, "name-prefix", hollow.DefaultNamePrefix, "nodes are named PREFIX0, PREFIX1, ...")
	fs.StringVar(&nodeIPs, "node-ips", hollow.DefaultNodeIPs, "range of the nodes' InternalIPs (never sent to: kubelets open their tunnels to the apiserver)")
	fs.StringVar(&cfg.CPU, "cpu", hollow.DefaultCPU, "each node's cpu capacity")
	fs.StringVar(&cfg.Memory, "memory", hollow.DefaultMemory, "each node's memory capacity")
	fs.IntVar(&cfg.MaxPods, "max-pods", 0, "each node's pod capacity (0: the kubelet's default)")
	fs.DurationVar(&cfg.LeaseInterval, "lease-interval", 0, "each node's Lease renewal interval (0: the kubelet's default)")
	fs.DurationVar(&cfg.NodeStatusInterval, "node-status-interval", 0, "each node's status interval (0: the kubelet's default)")
	fs.DurationVar(&cfg.StartInterval, "start-interval", hollow.DefaultStartInterval, "pause between two nodes' starts")
	fs.StringVar(&images, "images", strings.Join(hollow.DefaultImages, ","), "images present on every node, comma-separated")
	fs.StringVar(&metricsListen, "metrics-listen", "", "HTTP address for the process's /metrics and /healthz (empty disables)")
	_ = fs.Parse(os.Args[1:])
	if os.Getenv("GOGC") == "" {
		// The heap is the nodes' long-lived caches and connections and the
		// allocation rate at idle is low: collecting at +50% rather than
		// +100% keeps the RSS per node down for little CPU. GOGC overrides.
		debug.SetGCPercent(50)
	}
	component.Main("hollow", func(ctx context.Context) error {
		log, err := logs.Logger("hollow")
		if err != nil {
			return err
		}
		cfg.Logger = log
		if caFile == "" || caKey == "" {
			return errors.New("--ca-file and --ca-key-file: required (each hollow node presents its own node certificate)")
		}
		ca, err := pki.LoadCA(caFile, caKey)
		if err != nil {
			return err
		}
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		cfg.TLS = hollow.IssueFrom(ca, roots)
		if cfg.NodeIPs, err = netip.ParsePrefix(nodeIPs); err != nil {
			return errors.New("--node-ips: want a network prefix such as " + hollow.DefaultNodeIPs)
		}
		cfg.Images = strings.Split(images, ",")
		if metricsListen != "" {
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
				prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tugboat_hollow_nodes", Help: "Hollow nodes this process runs."},
					func() float64 { return float64(cfg.Nodes) }))
			cfg.Registry = reg
			go func() {
				if err := metricsserver.Serve(ctx, metricsListen, reg, nil); err != nil {
					log.Error("metrics server", "addr", metricsListen, "err", err)
				}
			}()
		}
		return hollow.Run(ctx, cfg)
	})
}
