package troubleshoot

import (
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/console"
)

type consoleFlags struct {
	listen        string
	token         string
	open          bool
	clusterDomain string
	metrics       map[string]string
	demo          bool
	demoImage     string
}

func newConsoleCommand(o *cli.Options) *cobra.Command {
	f := &consoleFlags{}
	cmd := &cobra.Command{
		Use:   "console [--listen 127.0.0.1:8080] [--open]",
		Short: "Serve a live web console of the cluster's two flows",
		Long: `Serve a live web console: the nodes with their pods, each pod's creation
flow (apply → apiserver → etcd → controllers → scheduler → kubelet → CNI →
runtime → Running → status back, each stage with its time, a failed one
with its layer, reason, message and the next command), each Service's
communication flow (DNS name, ClusterIP and ports, the node's datapath,
the endpoint pods as their readiness changes), the events by layer, and
charts of the components' metrics.

The console reads everything with this command's credentials (the
context, --server, --cert-file, --token-file, ...), so RBAC applies as for
the CLI: what you may not list is shown as forbidden. It serves on
loopback by default; a non-loopback --listen needs a token, which the page
asks for (--token, or a random one printed at start).

--metrics COMPONENT=URL (repeatable) names a component's /metrics for the
charts: apiserver (request latency, watches) and scheduler (attempts and
binds per second); pods bound and pod startup latency come from the watches.

--demo applies a sample Deployment and Service (console-demo, in the
namespace of -n; an earlier one is deleted first) and the cluster view
narrates their way: stored, ReplicaSet and pods made, scheduled, sandboxes
and IPs, started, ready, in the Service's endpoints.`,
		Example: `  tugctl console
  tugctl console --open
  tugctl console --demo -n lab
  tugctl console --listen 0.0.0.0:8080 --token "$(cat console.token)"
  tugctl console --metrics apiserver=http://127.0.0.1:10251/metrics`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := o.Client()
			if err != nil {
				return err
			}
			cfg := console.Config{Listen: f.listen, Token: f.token, ClusterDomain: f.clusterDomain, Metrics: f.metrics, Out: o.Out,
				Logger: slog.New(slog.NewTextHandler(o.ErrOut, &slog.HandlerOptions{Level: slog.LevelWarn}))}
			if f.demo {
				if cfg.DemoNamespace, err = o.Namespace(); err != nil {
					return err
				}
				cfg.Demo, cfg.DemoImage = true, f.demoImage
			}
			if f.open {
				cfg.OnServing = func(url string) { openBrowser(o, url) }
			}
			return console.Run(cmd.Context(), c, cfg)
		},
	}
	cmd.Flags().StringVar(&f.listen, "listen", console.DefaultListen, "address to serve on (a non-loopback address needs a token)")
	cmd.Flags().StringVar(&f.token, "token", "", "token the page asks for (default for a non-loopback --listen: a random one, printed)")
	cmd.Flags().BoolVar(&f.open, "open", false, "open the console in the default browser")
	cmd.Flags().StringVar(&f.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain (the kubelets' --cluster-domain)")
	cmd.Flags().StringToStringVar(&f.metrics, "metrics", nil, "COMPONENT=URL of a component's /metrics for the charts (apiserver, scheduler)")
	cmd.Flags().BoolVar(&f.demo, "demo", false, "apply a sample Deployment and Service (console-demo, replacing an earlier one) and narrate their flow")
	cmd.Flags().StringVar(&f.demoImage, "demo-image", console.DefaultDemoImage, "image of the --demo Deployment (it serves HTTP on port 80, /healthz)")
	return cmd
}

// openBrowser starts the desktop's browser on url, or says how to.
func openBrowser(o *cli.Options, url string) {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	cmd := exec.Command(opener, url)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(o.ErrOut, "--open: %s %s: %v; open the URL yourself\n", opener, url, strings.TrimSpace(err.Error()))
		return
	}
	go func() { _ = cmd.Wait() }()
}
