package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/client"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/describe"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/diagnose"
)

// Stage is one step of a pod's creation flow as the console draws it:
// the hops of the pod's trace (package diagnose, the same as `tugctl
// trace pod`) grouped under the architecture's names. Status is the
// worst of its hops (failed, waiting, unknown, done; skipped when none
// applies); Time is its last hop's time.
type Stage struct {
	ID     string         `json:"id"`
	Title  string         `json:"title"`
	Layer  string         `json:"layer"`
	Status string         `json:"status"`
	Detail string         `json:"detail,omitempty"`
	Time   *time.Time     `json:"time,omitempty"`
	Hops   []diagnose.Hop `json:"hops,omitempty"`
}

// PodFlow is GET /api/flow/pod/NS/NAME: the stages, and the trace they
// come from (its Finding names the failed stage's layer, reason, message
// and next command).
type PodFlow struct {
	Stages []Stage          `json:"stages"`
	Trace  *diagnose.Report `json:"trace"`
	// Failed is the ID of the stage the pod stopped at ("" when none).
	Failed string `json:"failed,omitempty"`
}

// Stage IDs, in the order things happen. The kubelet makes the sandbox
// (the CNI gives it its IP) before it pulls images and starts containers,
// so CNI comes before the runtime's images and containers.
const (
	stageApply       = "apply"
	stageAPIServer   = "apiserver"
	stageEtcd        = "etcd"
	stageControllers = "controllers"
	stageScheduler   = "scheduler"
	stageKubelet     = "kubelet"
	stageCNI         = "CNI"
	stageRuntime     = "runtime"
	stageRunning     = "Running"
	stageStatus      = "status"
)

// stageOfHop places each of the trace's hops: the runtime stage is the
// images (and init containers), Running is the containers started and
// running, and "status back" is the kubelet's Ready reported to the
// apiserver and the pod's address in its Services' endpoints.
var stageOfHop = map[string]string{
	"scheduled":   stageScheduler,
	"kubelet":     stageKubelet,
	"sandbox":     stageCNI,
	"images":      stageRuntime,
	"initialized": stageRuntime,
	"started":     stageRunning,
	"running":     stageRunning,
	"ready":       stageStatus,
	"endpoints":   stageStatus,
}

// ownerChain is a pod's controllers, nearest first (ReplicaSet, then
// Deployment), as far as the user may see them.
type ownerChain []workloadSummary

// buildPodFlow groups the trace r of pod p into stages. owners are the
// pod's controllers, nearest first (the apply stage is the top one's
// creation: what the user applied).
func buildPodFlow(r *diagnose.Report, p *v1.Pod, owners ownerChain) *PodFlow {
	m := p.GetMetadata()
	created := m.GetCreationTimestamp().AsTime()
	applied, what := created, "pod/"+m.GetName()
	if len(owners) > 0 {
		top := owners[len(owners)-1]
		applied, what = top.Created, kindLower(top.Kind)+"/"+top.Name
	}
	done := func(id, title, layer, detail string, at time.Time) Stage {
		return Stage{ID: id, Title: title, Layer: layer, Status: diagnose.HopDone, Detail: detail, Time: &at}
	}
	f := &PodFlow{Trace: r}
	f.Stages = append(f.Stages,
		done(stageApply, "apply", "client", what+" sent by the user", applied),
		done(stageAPIServer, "apiserver", diagnose.LayerAPIServer, "authenticated, authorized (RBAC), validated, defaulted: "+what, applied),
		done(stageEtcd, "etcd", "etcd", fmt.Sprintf("stored (pod resourceVersion %d)", m.GetResourceVersion()), applied))
	if len(owners) == 0 {
		f.Stages = append(f.Stages, Stage{ID: stageControllers, Title: "controllers", Layer: "controller-manager",
			Status: diagnose.HopSkipped, Detail: "a bare pod: no controller creates it"})
	} else {
		detail := ""
		for i := len(owners) - 1; i >= 0; i-- {
			detail += kindLower(owners[i].Kind) + "/" + owners[i].Name + " → "
		}
		f.Stages = append(f.Stages, done(stageControllers, "controllers", "controller-manager", detail+"pod/"+m.GetName(), created))
	}
	order := []struct{ id, title, layer string }{
		{stageScheduler, "scheduler", diagnose.LayerScheduler},
		{stageKubelet, "kubelet", diagnose.LayerKubelet},
		{stageCNI, "CNI", diagnose.LayerCNI},
		{stageRuntime, "runtime", diagnose.LayerKubelet},
		{stageRunning, "Running", diagnose.LayerKubelet},
		{stageStatus, "status back", diagnose.LayerEndpoints},
	}
	byStage := map[string][]diagnose.Hop{}
	for _, h := range r.Hops {
		if id, ok := stageOfHop[h.Hop]; ok {
			byStage[id] = append(byStage[id], h)
		}
	}
	for _, o := range order {
		s := Stage{ID: o.id, Title: o.title, Layer: o.layer, Hops: byStage[o.id]}
		s.Status, s.Time, s.Detail = worst(s.Hops)
		f.Stages = append(f.Stages, s)
		if f.Failed == "" && !r.OK && stageOfHop[r.StuckAt] == o.id {
			f.Failed = o.id
		}
	}
	return f
}

// rank orders hop statuses from best to worst.
var rank = map[string]int{diagnose.HopSkipped: 0, diagnose.HopDone: 1, diagnose.HopUnknown: 2, diagnose.HopWaiting: 3, diagnose.HopFailed: 4}

// worst is the worst status of hops, the last time among them, and the
// titles (with reasons) of the hops that set the status.
func worst(hops []diagnose.Hop) (string, *time.Time, string) {
	if len(hops) == 0 {
		return diagnose.HopWaiting, nil, ""
	}
	status := diagnose.HopSkipped
	var at *time.Time
	for _, h := range hops {
		if rank[h.Status] > rank[status] {
			status = h.Status
		}
		if h.Time != nil && (at == nil || h.Time.After(*at)) {
			at = h.Time
		}
	}
	detail := ""
	for _, h := range hops {
		if h.Status != status && status != diagnose.HopDone {
			continue
		}
		if detail != "" {
			detail += "; "
		}
		detail += h.Title
		if h.Reason != "" && h.Status != diagnose.HopDone {
			detail += " (" + h.Reason + ")"
		}
	}
	if status != diagnose.HopDone && status != diagnose.HopSkipped {
		// A failed stage shows when it failed; a waiting one no time, as
		// it has not been reached.
		at = nil
		for _, h := range hops {
			if status == diagnose.HopFailed && h.Status == status && h.Time != nil {
				at = h.Time
			}
		}
	}
	return status, at, detail
}

func kindLower(kind string) string {
	return strings.ToLower(kind)
}

// owners walks the pod's controllers through the feed's workloads.
func (f *feed) owners(p *v1.Pod) ownerChain {
	var out ownerChain
	o := controllerOf(p.GetMetadata())
	ns := p.GetMetadata().GetNamespace()
	for o != nil && len(out) < 4 {
		w, ok := f.get(kindWorkloads, o.Kind+workloadKeySep+ns+"/"+o.Name)
		if !ok {
			// Not visible (or not watched): name it without a time.
			break
		}
		ws := w.(workloadSummary)
		out = append(out, ws)
		o = ws.Owner
	}
	return out
}

func (s *server) servePodFlow(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	ctx := r.Context()
	pod, err := client.For[*v1.Pod](s.client).Get(ctx, ns, name)
	if err != nil {
		apiError(w, err)
		return
	}
	rep, err := diagnose.TracePod(ctx, s.client, ns, name, time.Now())
	if err != nil {
		apiError(w, err)
		return
	}
	writeJSON(w, buildPodFlow(rep, pod, s.feed.owners(pod)))
}

// ServiceFlow is GET /api/flow/service/NS/NAME: pod → DNS name →
// ClusterIP:port → the node's datapath → the endpoint pods, from the
// feed's Service and Endpoints and the Service's backends (diagnose: why
// none is ready).
type ServiceFlow struct {
	Service   serviceSummary    `json:"service"`
	DNSName   string            `json:"dnsName"`
	Endpoints *endpointsSummary `json:"endpoints,omitempty"`
	// Why is diagnose's reason and message when no endpoint is ready.
	WhyReason  string `json:"whyReason,omitempty"`
	WhyMessage string `json:"whyMessage,omitempty"`
}

func (s *server) serveServiceFlow(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	svc, err := client.For[*v1.Service](s.client).Get(r.Context(), ns, name)
	if err != nil {
		apiError(w, err)
		return
	}
	out := &ServiceFlow{Service: summarizeService(svc), DNSName: fmt.Sprintf("%s.%s.svc.%s", name, ns, s.cfg.ClusterDomain)}
	if e, ok := s.feed.get(kindEndpoints, ns+"/"+name); ok {
		es := e.(endpointsSummary)
		out.Endpoints = &es
	}
	b, err := diagnose.ServiceBackends(r.Context(), s.client, svc)
	if err != nil && !errors.Is(err, apierrors.ErrForbidden) {
		apiError(w, err)
		return
	}
	if b != nil {
		out.WhyReason, out.WhyMessage = b.Reason, b.Message
	}
	writeJSON(w, out)
}

// serveServiceTrace is `tugctl trace service` on demand: every Ready
// node tries the DNS name, the ClusterIP ports and a few endpoints.
func (s *server) serveServiceTrace(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rep, err := diagnose.TraceService(ctx, s.client, r.PathValue("ns"), r.PathValue("name"), s.cfg.ClusterDomain)
	if err != nil {
		apiError(w, err)
		return
	}
	writeJSON(w, rep)
}

// serveIngressTrace is `tugctl trace ingress` on demand: the Ingress's
// class, address, TLS Secrets, rules, backends, endpoints and the
// proxies' Events, through the CLI's diagnose.TraceIngress.
func (s *server) serveIngressTrace(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rep, err := diagnose.TraceIngress(ctx, s.client, r.PathValue("ns"), r.PathValue("name"), time.Now())
	if err != nil {
		apiError(w, err)
		return
	}
	writeJSON(w, rep)
}

// serveDescribe is `tugctl describe KIND NAME` as text.
func (s *server) serveDescribe(w http.ResponseWriter, r *http.Request) {
	k, err := kinds.Lookup(r.PathValue("kind"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ns := r.PathValue("ns")
	if !k.Namespaced {
		ns = ""
	}
	obj, err := client.ForKind(s.client, k).Get(r.Context(), ns, r.PathValue("name"))
	if err != nil {
		apiError(w, err)
		return
	}
	var buf bytes.Buffer
	if err := describe.Object(r.Context(), &buf, s.client, obj, true); err != nil {
		apiError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// apiError answers an API error with its HTTP status and message.
func apiError(w http.ResponseWriter, err error) {
	code := http.StatusBadGateway
	switch {
	case apierrors.IsNotFound(err):
		code = http.StatusNotFound
	case errors.Is(err, apierrors.ErrForbidden):
		code = http.StatusForbidden
	case errors.Is(err, apierrors.ErrUnauthenticated):
		code = http.StatusUnauthorized
	}
	http.Error(w, err.Error(), code)
}
