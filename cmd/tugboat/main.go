// Command tugboat is Tugboat in one process: a single-node cluster for a
// laptop or a single VM, composed from the same packages as the separate
// binaries — embedded etcd and the apiserver (TLS, RBAC and the node
// authorizer on, as always), the scheduler, the controller-manager, the
// kubelet and the proxy — each with its own client certificate, so what
// one may do is exactly what it may do in a multi-node cluster.
//
//	sudo tugboat up        run until Ctrl-C / SIGTERM (state in --data-dir)
//	sudo tugboat down      remove what up put on the host (same flags)
//	tugboat version
//
// It needs root, containerd (the one answering at --containerd-socket, or
// else one of its own that the kubelet runs in <data-dir>/containerd, as
// k3s does), runc, the CNI plugins and iptables (Debian: apt-get install
// containerd runc containernetworking-plugins iptables, or
// hack/install-deps.sh). It writes an admin tugctl config to
// <data-dir>/admin.config and, under sudo, to the invoking user's
// ~/.tugboat/config. Ctrl-C stops it and leaves the pods running; `tugboat
// down` then removes them and everything else up made outside the data
// kept in --data-dir (down.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/tugboat/tugboat/api/component"
	"github.com/tugboat/tugboat/kubelet"
	"github.com/tugboat/tugboat/proxy"
)

const usage = `usage: tugboat up [flags]    run a single-node cluster in this process
       tugboat down [flags]  remove what up put on the host (its pods, their network,
                             mounts and cgroups, the CNI config, the tables, its
                             containerd's runtime state); etcd's data and the
                             certificates stay in --data-dir
       tugboat version
Run 'tugboat up -h' for the flags; down takes the same.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmdName := os.Args[1]
	switch cmdName {
	case "up", "down":
	case "version", "--version":
		fmt.Println("tugboat", kubelet.Version)
		return
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "tugboat: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	var cfg Config
	var logs component.LogFlags
	fs := flag.NewFlagSet("tugboat "+cmdName, flag.ExitOnError)
	insecure, cniBin := registerFlags(fs, &cfg)
	logs.Register(fs)
	_ = fs.Parse(os.Args[2:])
	cfg.CNIBinDirs = splitList(*cniBin, ",:")
	cfg.RegistryInsecure = splitList(*insecure, ",")

	component.Main("tugboat "+cmdName, func(ctx context.Context) error {
		log, err := logs.Logger("tugboat")
		if err != nil {
			return err
		}
		cfg.Logger = log
		if cmdName == "down" {
			return Down(ctx, cfg)
		}
		return Run(ctx, cfg)
	})
}

func splitList(s, seps string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// registerFlags adds up's and down's flags to fs, into cfg, but for the
// two lists, whose flags' texts it returns.
func registerFlags(fs *flag.FlagSet, cfg *Config) (insecure, cniBin *string) {
	insecure, cniBin = new(string), new(string)
	host, _ := os.Hostname()
	fs.StringVar(&cfg.DataDir, "data-dir", "/var/lib/tugboat", "state: etcd data, certificates (pki/), the kubelet's root dir (kubelet/)")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:6443", "the apiserver's address; the components reach it there too")
	fs.StringVar(&cfg.KubeListen, "kube-listen", "127.0.0.1:6444", "the Kubernetes HTTP API's address, for kubectl and client-go (empty disables)")
	fs.StringVar(&cfg.NodeName, "node-name", strings.ToLower(host), "the node's name")
	fs.StringVar(&cfg.NodeIP, "node-ip", "", "the node's InternalIP (default: the address of the default route's interface)")
	fs.StringVar(&cfg.Runtime, "runtime", kubelet.RuntimeCRI, "the kubelet's runtime backend: cri (over CRI; crictl shows the pods) or containerd (containerd's own API)")
	fs.StringVar(&cfg.RuntimeEndpoint, "container-runtime-endpoint", "", "the CRI runtime's socket, unix:///path (--runtime cri; default: a containerd of the kubelet's own in <data-dir>/containerd, configured for it)")
	fs.StringVar(&cfg.ContainerdSocket, "containerd-socket", "/run/containerd/containerd.sock", "containerd's socket (--runtime containerd)")
	fs.StringVar(&cfg.ContainerdNamespace, "containerd-namespace", "tugboat", "containerd namespace of the pods (--runtime containerd)")
	fs.StringVar(&cfg.CgroupRoot, "cgroup-root", "/tugboat", "cgroup under which each pod gets pod<uid>")
	fs.StringVar(cniBin, "cni-bin-dir", kubelet.DefaultCNIBinDir+":/opt/cni/bin", "directories searched for CNI plugins")
	fs.StringVar(&cfg.CNIConfDir, "cni-conf-dir", "/etc/cni/net.d", "CNI config directory (the kubelet writes its default there unless one is present)")
	fs.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.244.0.0/16", "pod addresses; the node gets a /24 of it")
	fs.StringVar(&cfg.ServiceCIDR, "service-cidr", "10.96.0.0/16", "ClusterIP range (.10 is the cluster DNS)")
	fs.StringVar(insecure, "registry-insecure", "", "registry hosts (host:port, comma-separated) pulled from over plain HTTP")
	fs.StringVar(&cfg.ImportImages, "import-images", "", "copy the image archives (*.tar) of this folder into the node's import folder at start (e.g. bin/images from `make images`)")
	fs.StringVar(&cfg.AdminConfig, "admin-config", "", "where to write the admin tugctl config (default <data-dir>/admin.config)")
	fs.BoolVar(&cfg.NoUserConfig, "no-user-config", false, "do not write ~/.tugboat/config for the user who ran sudo")
	proxy.RegisterIngressFlags(fs, &cfg.IngressListen, &cfg.IngressTLSListen)
	return insecure, cniBin
}
