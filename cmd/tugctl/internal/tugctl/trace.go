package tugctl

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// Layers a trace names: where in the architecture a hop happens, so the
// user knows which component to look at.
const (
	layerAPIServer = "apiserver"
	layerScheduler = "scheduler"
	layerKubelet   = "kubelet+runtime"
	layerCNI       = "CNI"
	layerDNS       = "DNS"
	layerProxy     = "proxy"
	layerEndpoints = "endpoints"
)

// Hop statuses.
const (
	hopDone    = "done"    // reached, fine
	hopFailed  = "failed"  // reached and went wrong: reason and message say how
	hopWaiting = "waiting" // not reached (yet)
	hopSkipped = "skipped" // does not apply
	hopUnknown = "unknown" // could not be checked (a node out of reach)
)

// traceReport is what `tugctl trace` prints; its JSON (-o json) is a
// stable schema documented in cmd/tugctl/README.md.
type traceReport struct {
	Kind      string     `json:"kind"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Node      string     `json:"node,omitempty"`
	Summary   string     `json:"summary"`
	OK        bool       `json:"ok"`
	Hops      []traceHop `json:"hops"`
	// The diagnosis, when !OK: the first hop not done, the layer and
	// component to look at, why, and a command to look further.
	StuckAt   string `json:"stuck_at,omitempty"`
	Layer     string `json:"layer,omitempty"`
	Component string `json:"component,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	Hint      string `json:"hint,omitempty"`
}

// traceHop is one step of the journey.
type traceHop struct {
	Hop       string `json:"hop"`
	Title     string `json:"title"`
	Layer     string `json:"layer"`
	Component string `json:"component"`
	Node      string `json:"node,omitempty"`
	Status    string `json:"status"`
	// Time is when the hop was reached, if known; SincePrevious the
	// seconds since the previous hop with a time.
	Time          *time.Time `json:"time,omitempty"`
	SincePrevious *float64   `json:"since_previous_seconds,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	Message       string     `json:"message,omitempty"`
}

// diagnosis is why a trace stopped.
type diagnosis struct {
	layer, component, reason, message, hint string
}

// finish sets the times since the previous hop, OK, and the stuck hop
// with its diagnosis: diag, or the hop's own layer and reason.
func (r *traceReport) finish(diag func(h *traceHop) diagnosis) {
	var prev *time.Time
	for i := range r.Hops {
		h := &r.Hops[i]
		if h.Time == nil {
			continue
		}
		if prev != nil {
			d := h.Time.Sub(*prev).Seconds()
			h.SincePrevious = &d
		}
		prev = h.Time
	}
	r.OK = true
	for i := range r.Hops {
		h := &r.Hops[i]
		if h.Status != hopFailed && h.Status != hopWaiting {
			continue
		}
		r.OK = false
		r.StuckAt = h.Hop
		d := diagnosis{layer: h.Layer, component: h.Component, reason: h.Reason, message: h.Message}
		if diag != nil {
			d = diag(h)
		}
		r.Layer, r.Component, r.Reason, r.Message, r.Hint = d.layer, d.component, d.reason, d.message, d.hint
		if r.Node == "" {
			r.Node = h.Node
		}
		return
	}
}

type traceFlags struct {
	output        string
	clusterDomain string
}

func newTraceCommand(o *Options) *cobra.Command {
	f := &traceFlags{}
	cmd := &cobra.Command{
		Use:   "trace (pod|service) NAME | KIND/NAME",
		Short: "Follow a pod's journey or a Service's path, and name the layer where it stops",
		Long: `Follow a pod's journey through the components, one hop per line with its
time and the time since the previous hop: accepted and stored (apiserver),
scheduled (scheduler), seen by the kubelet, sandbox and IP (CNI), images
ready, containers started (runtime), containers keep running, ready
(probes), in the endpoints of its Services. A pod that is stuck gets the hop
where it stopped, the layer (scheduler, kubelet+runtime, CNI, DNS, proxy,
endpoints), the reason, and what to look at next.

For a Service, check its communication path from every Ready node: its DNS
name asked of the node's cluster DNS, the node's rules for its ClusterIP
ports (read from the kernel by the node's kubelet), and its ready endpoints.
A NAME may be a Service's DNS name (web.shop.svc.cluster.local).

-o json prints a stable schema (see the README): kind, namespace, name,
node, ok, hops[] (hop, title, layer, component, node, status, time,
since_previous_seconds, reason, message), stuck_at, layer, component,
reason, message, hint.`,
		Example: `  tugctl trace pod web-5d7f8c-x2x9q
  tugctl trace svc/web -o json
  tugctl trace service web.shop.svc.cluster.local`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.runTrace(cmd.Context(), args, f)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "output format: json (default: a table)")
	cmd.Flags().StringVar(&f.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain (the kubelets' --cluster-domain)")
	return cmd
}

func (o *Options) runTrace(ctx context.Context, args []string, f *traceFlags) error {
	if f.output != "" && f.output != outJSON {
		return fmt.Errorf("--output %q: want json, or nothing for a table", f.output)
	}
	refs, err := singleRefs(args, "Pod", "Service")
	if err != nil {
		return err
	}
	if len(refs) != 1 {
		return fmt.Errorf("trace takes one object: pod NAME or service NAME")
	}
	c, err := o.Client()
	if err != nil {
		return err
	}
	ns, err := o.Namespace()
	if err != nil {
		return err
	}
	var r *traceReport
	switch refs[0].kind.Name {
	case "Pod":
		r, err = tracePod(ctx, c, ns, refs[0].name, time.Now())
	default:
		r, err = traceService(ctx, c, ns, refs[0].name, f.clusterDomain)
	}
	if err != nil {
		return err
	}
	if f.output == outJSON {
		enc := json.NewEncoder(o.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	writeTrace(o.Out, r)
	return nil
}

// writeTrace prints a report as a table and, for a stuck one, its
// diagnosis.
func writeTrace(w io.Writer, r *traceReport) {
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
		if h.Reason != "" && h.Status != hopDone {
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
	if r.Hint != "" {
		fmt.Fprintf(w, "  Next:    %s\n", r.Hint)
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

// timeIfTrue returns a condition's transition time when it is True.
func timeIfTrue(conds []*v1.Condition, typ string) *time.Time {
	c := condition(conds, typ)
	if c == nil || c.Status != "True" || c.LastTransitionTime == nil {
		return nil
	}
	t := c.LastTransitionTime.AsTime()
	return &t
}
