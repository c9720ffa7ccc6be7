package troubleshoot

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

type traceFlags struct {
	output        string
	clusterDomain string
	from          string
}

func newTraceCommand(o *cli.Options) *cobra.Command {
	f := &traceFlags{}
	cmd := &cobra.Command{
		Use:   "trace (pod|service|ingress) NAME | KIND/NAME",
		Short: "Follow a pod's journey, a Service's or an Ingress's path, and name the layer where it stops",
		Long: `Follow a pod's journey through the components, one hop per line with its
time and the time since the previous hop: accepted and stored (apiserver),
scheduled (scheduler), seen by the kubelet, sandbox and IP (CNI), images
ready, containers started (runtime), containers keep running, ready
(probes), in the endpoints of its Services. A pod that is stuck gets the hop
where it stopped, the layer (scheduler, kubelet+runtime, CNI, DNS, proxy,
endpoints), the reason, and what to look at next.

For a Service, try its communication path from every Ready node, as a user
there would: its DNS name asked of the node's cluster DNS, a connection to
each ClusterIP port and to a few of its endpoints directly (made by the
node's kubelet from a pod's network namespace), and its ready endpoints.
A NAME may be a Service's DNS name (web.shop.svc.cluster.local).

With --from POD, follow the path one client pod's packets take instead:
the pod and its node, its dnsPolicy/dnsConfig (does it ask the cluster
DNS, with a search path for the name), the Service's name and each
ClusterIP port tried from the pod's own network namespace by its node's
kubelet (so through that node's Service rules), the NetworkPolicies that
isolate the pod for egress and the endpoints' pods for ingress (naming
the policies that drop the traffic, if any), and the ready endpoints.

For an Ingress, follow a request as the proxies' ingress datapath takes it:
its IngressClass and controller, the address the proxies wrote, each TLS
Secret (present, kubernetes.io/tls, in date, covering its hosts), each
rule's host and path (not claimed by an older Ingress) to its backend
Service and port, the Service's ready endpoints in its EndpointSlices (or
why it has none), their pods on Ready nodes, and the proxies' own recent
Warning Events on the Ingress (the reasons a request gets 503).

-o json prints a stable schema (see the README): kind, namespace, name,
node, ok, hops[] (hop, title, layer, component, node, status, time,
since_previous_seconds, reason, message), stuck_at, layer, component,
reason, message, hint.`,
		Example: `  tugctl trace pod web-5d7f8c-x2x9q
  tugctl trace svc/web -o json
  tugctl trace service web.shop.svc.cluster.local
  tugctl trace service web --from client-7d9f
  tugctl trace ingress web`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTrace(cmd.Context(), o, args, f)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "output format: json (default: a table)")
	cmd.Flags().StringVar(&f.from, "from", "", "service only: trace from this client pod (POD or NAMESPACE/POD): its DNS config, its node's rules tried from its own network namespace, the NetworkPolicies for it and the endpoints")
	cmd.Flags().StringVar(&f.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain (the kubelets' --cluster-domain)")
	return cmd
}

func runTrace(ctx context.Context, o *cli.Options, args []string, f *traceFlags) error {
	if f.output != "" && f.output != printers.JSON {
		return fmt.Errorf("--output %q: want json, or nothing for a table", f.output)
	}
	refs, err := cli.SingleRefs(args, "Pod", "Service", "Ingress")
	if err != nil {
		return err
	}
	if len(refs) != 1 {
		return fmt.Errorf("trace takes one object: pod NAME, service NAME or ingress NAME")
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	if f.from != "" && refs[0].Kind.Name != "Service" {
		return fmt.Errorf("--from is for trace service: a Service's path from a client pod")
	}
	var r *diagnose.Report
	switch refs[0].Kind.Name {
	case "Pod":
		r, err = diagnose.TracePod(ctx, c, ns, refs[0].Name, time.Now())
	case "Ingress":
		r, err = diagnose.TraceIngress(ctx, c, ns, refs[0].Name, time.Now())
	case "Service":
		if f.from != "" {
			r, err = diagnose.TraceServiceFrom(ctx, c, ns, refs[0].Name, f.clusterDomain, f.from)
			break
		}
		r, err = diagnose.TraceService(ctx, c, ns, refs[0].Name, f.clusterDomain)
	}
	if err != nil {
		return err
	}
	if f.output == printers.JSON {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeTrace(o.Out, r)
	return nil
}

// writeTrace prints a report as a table and, for a stuck one, its
// diagnosis.
func writeTrace(w io.Writer, r *diagnose.Report) {
	fmt.Fprintf(w, "%s %s/%s: %s\n\n", r.Kind, r.Namespace, r.Name, r.Summary)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "  HOP\tCOMPONENT\tTIME\tSINCE PREV\tSTATUS")
	for _, h := range r.Hops {
		comp := h.Component
		if h.Node != "" {
			comp += " (" + h.Node + ")"
		}
		at, since := "", ""
		if h.Time != nil {
			at = h.Time.Local().Format("15:04:05.000")
		}
		if h.SincePrevious != nil {
			since = shortDuration(time.Duration(*h.SincePrevious * float64(time.Second)))
			if *h.SincePrevious >= 0 {
				since = "+" + since
			}
		}
		status := h.Status
		if h.Reason != "" && h.Status != diagnose.HopDone {
			status += ": " + h.Reason
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", h.Title, comp, at, since, status)
	}
	tw.Flush()
	fmt.Fprintln(w)
	if r.OK {
		fmt.Fprintln(w, "Every hop is done.")
		return
	}
	comp := r.Component
	if r.Node != "" && !strings.Contains(comp, r.Node) {
		comp += " on " + r.Node
	}
	fmt.Fprintf(w, "Stopped at %q: layer %s, look at the %s.\n", r.StuckAt, r.Layer, comp)
	if r.Reason != "" {
		fmt.Fprintf(w, "  Reason:  %s\n", r.Reason)
	}
	if r.Message != "" {
		fmt.Fprintf(w, "  Message: %s\n", r.Message)
	}
	if r.Next != "" {
		fmt.Fprintf(w, "  Next:    %s\n", r.Next)
	}
}

// shortDuration is "850ms", "1.2s", "3m4s".
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + shortDuration(-d)
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
