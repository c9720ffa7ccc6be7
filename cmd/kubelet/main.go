// Command kubelet is Tugboat's node agent: it registers the node, runs the
// pods bound to it on containerd with CNI networking, and serves logs,
// exec and image import over a tunnel to the apiserver. See kubelet/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	ctdlog "github.com/containerd/log"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/api/join"
	"github.com/tugboat/tugboat/internal/containerdconfig"
	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/kubelet/eviction"
	"github.com/tugboat/tugboat/kubelet/pod"
	"github.com/tugboat/tugboat/kubelet/runtime/containerd"
	"github.com/tugboat/tugboat/kubelet/runtime/cri"
)

func main() {
	var (
		cfg                      kubelet.Config
		clientFlags              component.ClientFlags
		logFlags                 component.LogFlags
		cniBin, dns, insecure    string
		labels, token, certDir   string
		logMaxSize               int64
		showVersion, cleanup     bool
		defaultName, defaultNote = hostname()
	)
	fs := flag.NewFlagSet("kubelet", flag.ExitOnError)
	clientFlags.Register(fs)
	logFlags.Register(fs)
	fs.StringVar(&cfg.NodeName, "node-name", defaultName, "this node's name"+defaultNote)
	fs.StringVar(&cfg.NodeIP, "node-ip", "", "the node's InternalIP (default: the address of the default route's interface)")
	fs.StringVar(&labels, "node-labels", "", "labels added to the Node, k=v,k2=v2")
	fs.StringVar(&cfg.RootDir, "root-dir", kubelet.DefaultRootDir, "directory for pods (logs, volumes, /etc files), network namespaces, CNI state and the image import folder (<root-dir>/images)")
	fs.StringVar(&cfg.Runtime, "runtime", kubelet.RuntimeCRI, "runtime backend: cri (any CRI runtime at --container-runtime-endpoint; the runtime runs CNI) containerd (containerd's own API at --containerd-socket; the kubelet runs CNI) or hollow (a simulated node: pods start at once with addresses from the pod CIDR and run nothing; see hack/hollow for many in one process)")
	fs.StringVar(&cfg.RuntimeEndpoint, "container-runtime-endpoint", cri.DefaultEndpoint, "the CRI runtime's socket, unix:///path (--runtime cri)")
	fs.StringVar(&cfg.SandboxImage, "pod-infra-container-image", containerdconfig.DefaultSandboxImage, "the sandbox (pause) image the runtime's config names (--runtime cri): a kubelet-run containerd (--containerd-dir) is configured with it, and a sandbox failing while it is missing says how to import it")
	fs.StringVar(&cfg.ContainerdSocket, "containerd-socket", containerd.DefaultAddress, "containerd's gRPC socket (--runtime containerd)")
	fs.StringVar(&cfg.ContainerdDir, "containerd-dir", "", "if set, run a containerd of the kubelet's own with root, state, config and socket in this directory when none answers at --containerd-socket (or the directory holds an earlier one's state); it stops with the kubelet, its containers keep running")
	fs.StringVar(&cfg.ContainerdNamespace, "containerd-namespace", containerd.DefaultNamespace, "containerd namespace for pods and images (--runtime containerd; the CRI keeps its own, k8s.io)")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", containerd.DefaultCgroupParent, "cgroup under which each pod gets pod<uid>")
	fs.StringVar(&insecure, "registry-insecure", "", "registry hosts (host:port, comma-separated) pulled from over plain HTTP, e.g. a lab registry")
	fs.StringVar(&cniBin, "cni-bin-dir", kubelet.DefaultCNIBinDir+":/opt/cni/bin", "directories searched for CNI plugins, colon- or comma-separated")
	fs.StringVar(&cfg.CNIConfDir, "cni-conf-dir", "/etc/cni/net.d", "CNI config directory; the kubelet writes a bridge/host-local/portmap/loopback conflist there unless one is present")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "", "every node's pods' range (the controller-manager's --cluster-cidr): pod traffic to it keeps its source address; empty: only this node's pod CIDR is exempt from masquerading")
	fs.StringVar(&cfg.PodCIDR, "pod-cidr", "", "the node's pod CIDR; default: Node.spec.podCIDR as the controller-manager's node IPAM sets it")
	fs.StringVar(&dns, "cluster-dns", kubelet.DefaultClusterDNS, "nameservers of ClusterFirst pods, comma-separated")
	fs.StringVar(&cfg.ClusterDomain, "cluster-domain", pod.DefaultClusterDomain, "the cluster's DNS domain")
	fs.IntVar(&cfg.MaxPods, "max-pods", 110, "pods capacity of the node")
	fs.StringVar(&cfg.CPU, "cpu", "", "cpu capacity to report (default: the machine's cores)")
	fs.StringVar(&cfg.Memory, "memory", "", "memory capacity to report, e.g. 8Gi (default: the machine's)")
	fs.DurationVar(&cfg.LeaseInterval, "lease-interval", 10*time.Second, "how often the node's Lease is renewed (its duration is 4 times that)")
	fs.DurationVar(&cfg.NodeStatusInterval, "node-status-interval", 10*time.Second, "how often the node's status and conditions are re-checked")
	fs.DurationVar(&cfg.CrashBackoff, "crash-backoff", pod.DefaultCrashBackoffInitial, "first restart back-off of a crashing container (doubles each time)")
	fs.DurationVar(&cfg.CrashBackoffMax, "crash-backoff-max", pod.DefaultCrashBackoffMax, "longest restart back-off")
	fs.DurationVar(&cfg.ImagePullBackoff, "image-pull-backoff", pod.DefaultImagePullBackoffInitial, "first image pull back-off (doubles each time)")
	fs.DurationVar(&cfg.ImagePullBackoffMax, "image-pull-backoff-max", pod.DefaultImagePullBackoffMax, "longest image pull back-off")
	fs.Int64Var(&logMaxSize, "container-log-max-size", 10<<20, "container logs are rotated past this many bytes")
	fs.IntVar(&cfg.LogMaxFiles, "container-log-max-files", 5, "container log files kept per container, the live one included")
	fs.StringVar(&cfg.EvictionHard, "eviction-hard", eviction.DefaultEvictionHard, "hard eviction thresholds, SIGNAL<QUANTITY or SIGNAL<PERCENT% comma-separated (memory.available, nodefs.available: the --root-dir's file system, imagefs.available: --image-fs-dir's); crossing one sets MemoryPressure or DiskPressure and evicts pods, best-effort first; none disables")
	fs.StringVar(&cfg.ImageFSDir, "image-fs-dir", kubelet.DefaultImageFSDir, "the container runtime's image store (its file system is imagefs)")
	fs.StringVar(&cfg.MetricsListen, "metrics-listen", kubelet.DefaultMetricsListen, "HTTP address for /metrics, /healthz and /debug/pprof (empty disables)")
	fs.StringVar(&token, "bootstrap-token", "", "join token (tugctl token create) spent once on this node's client certificate; needs --ca-file")
	fs.StringVar(&certDir, "cert-dir", "", "where a joined kubelet keeps its certificate, renewed before it expires (default <root-dir>/pki)")
	fs.BoolVar(&showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&cleanup, "cleanup", false, "remove everything a kubelet with these flags put on this host (its pods' containers, CNI DEL, network namespaces, mounts and cgroups; the masquerade table, and with its own default config the bridge and the conflist; its own containerd's runtime state) and exit; no kubelet may be running")
	_ = fs.Parse(os.Args[1:])
	if showVersion {
		fmt.Println("kubelet", kubelet.Version)
		return
	}
	cfg.LogMaxSize = logMaxSize
	cfg.CNIBinDirs = splitPaths(cniBin)
	cfg.ClusterDNS = splitList(dns)
	cfg.RegistryInsecure = splitList(insecure)

	component.Main("kubelet", func(ctx context.Context) error {
		log, err := logFlags.Logger("kubelet")
		if err != nil {
			return err
		}
		cfg.Logger = log
		// containerd's client logs through logrus: keep it to warnings.
		_ = ctdlog.SetLevel("warn")
		if cleanup {
			return kubelet.Cleanup(ctx, cfg)
		}
		if cfg.NodeLabels, err = kubelet.ParseLabels(labels); err != nil {
			return err
		}
		if cfg.Client, err = clientFlags.Config("kubelet"); err != nil {
			return err
		}
		// Join mode: a join token, or a certificate a previous join left,
		// instead of a static --cert-file.
		if certDir == "" {
			certDir = kubelet.DefaultCertDir(cfg.RootDir)
		}
		_, statErr := os.Stat(filepath.Join(certDir, "node.crt"))
		if clientFlags.CertFile == "" && clientFlags.CAFile != "" && (token != "" || statErr == nil) {
			cfg.Join = &join.Config{CAFile: clientFlags.CAFile, Token: token, Dir: certDir}
		} else if token != "" {
			return fmt.Errorf("--bootstrap-token needs --ca-file (the cluster CA) and no --cert-file")
		}
		return kubelet.Run(ctx, cfg)
	})
}

// hostname is the default node name: the host name, lower-cased.
func hostname() (string, string) {
	h, err := os.Hostname()
	if err != nil {
		return "", " (required: the host name is unknown)"
	}
	return strings.ToLower(h), ""
}

// splitList splits a comma-separated list.
func splitList(s string) []string { return split(s, ",") }

// splitPaths splits a list of directories on commas and colons.
func splitPaths(s string) []string { return split(s, ",:") }

func split(s, seps string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
