// Package diagnose finds where and why something in the cluster is stuck,
// for `tugctl trace` and `tugctl describe` now and the web console later:
// a pod's journey through the components (accepted, scheduled, seen by the
// kubelet, sandbox and IP, images, started, running, ready, in its
// Services' endpoints) and a Service's communication path (tried from
// every Ready node: its DNS name, its ClusterIP ports and a few endpoints
// directly; then its ready endpoints) and an Ingress's (its class and
// controller, address, TLS Secrets, each rule's Service, EndpointSlices
// and pods on their nodes, the proxies' Events: ingress.go), each as a
// Report of hops with a Finding for the first hop that is not done: the
// layer (scheduler, kubelet+runtime, CNI, DNS, proxy, endpoints), the
// component to look at, the reason, a message, and the next command to
// run. ServiceBackends says why a Service has no ready endpoint; Events
// are an object's events.
//
// The loop is read, then decide: TracePod, TraceService and TraceIngress read what they
// need through the API (and the nodes' CheckService through the
// apiserver's relay), then build the report from those objects alone, a
// pure function the tests drive with fixtures. The package never writes
// to the cluster and never prints: it knows nothing of cobra or of a
// terminal, and its callers format the Report (the CLI as a table or the
// stable JSON of cmd/tugctl/README.md).
package diagnose

import (
	"time"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Layers a trace names: where in the architecture a hop happens, so the
// user knows which component to look at.
const (
	LayerAPIServer = "apiserver"
	LayerScheduler = "scheduler"
	LayerKubelet   = "kubelet+runtime"
	LayerCNI       = "CNI"
	LayerDNS       = "DNS"
	LayerProxy     = "proxy"
	LayerEndpoints = "endpoints"
)

// Hop statuses.
const (
	HopDone    = "done"    // reached, fine
	HopFailed  = "failed"  // reached and went wrong: reason and message say how
	HopWaiting = "waiting" // not reached (yet)
	HopSkipped = "skipped" // does not apply
	HopUnknown = "unknown" // could not be checked (a node out of reach)
)

// Report is a pod's journey or a Service's path. Its JSON is the stable
// schema of `tugctl trace -o json` (cmd/tugctl/README.md): fields are only
// added, never renamed.
type Report struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Node      string `json:"node,omitempty"`
	Summary   string `json:"summary"`
	OK        bool   `json:"ok"`
	Hops      []Hop  `json:"hops"`
	// Finding is the diagnosis when !OK (empty when OK).
	Finding
}

// Finding is why a trace stopped: the first hop not done, the layer and
// component to look at, why, and the command to run next.
type Finding struct {
	StuckAt   string `json:"stuck_at,omitempty"`
	Layer     string `json:"layer,omitempty"`
	Component string `json:"component,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
	// Next is a command line (or a few, "; "-separated) that looks
	// further; "hint" in the JSON.
	Next string `json:"hint,omitempty"`
}

// Hop is one step of the journey.
type Hop struct {
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

// finish sets the times since the previous hop, OK, and the stuck hop
// with its finding: find's, or the hop's own layer and reason.
func (r *Report) finish(find func(h *Hop) Finding) {
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
		if h.Status != HopFailed && h.Status != HopWaiting {
			continue
		}
		r.OK = false
		f := Finding{Layer: h.Layer, Component: h.Component, Reason: h.Reason, Message: h.Message}
		if find != nil {
			f = find(h)
		}
		f.StuckAt = h.Hop
		r.Finding = f
		if r.Node == "" {
			r.Node = h.Node
		}
		return
	}
}

// timeIfTrue returns a condition's transition time when it is True.
func timeIfTrue(conds []*v1.Condition, typ string) *time.Time {
	c := table.Condition(conds, typ)
	if c == nil || c.Status != "True" || c.LastTransitionTime == nil {
		return nil
	}
	t := c.LastTransitionTime.AsTime()
	return &t
}
