package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The resource metrics API (metrics.k8s.io/v1beta1), which kubectl top
// reads: NodeMetrics and PodMetrics computed on request from each node's
// NodeAPI.Stats (the kubelet's cgroup samples, over its tunnel), as
// metrics-server serves them from the kubelets. Reading a node's stats is
// authorized as get on nodes/stats, so pod metrics need that too (in
// Kubernetes they need get on pods.metrics.k8s.io). Nodes whose kubelet
// has no tunnel open are left out, as metrics-server leaves out nodes it
// cannot scrape.

const metricsGroup = "metrics.k8s.io"

var metricsResources = []apiResource{
	{Name: "nodes", SingularName: "", Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
	{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}},
}

func (h *Handler) metricsAPI(w http.ResponseWriter, r *http.Request, path string) bool {
	rest, ok := strings.CutPrefix(path, "/apis/"+metricsGroup+"/v1beta1/")
	if !ok {
		return false
	}
	if r.Method != http.MethodGet {
		writeStatus(w, statusOf(methodNotAllowed(r), target{}))
		return true
	}
	seg := strings.Split(rest, "/")
	ns := ""
	if len(seg) >= 3 && seg[0] == "namespaces" {
		ns, seg = seg[1], seg[2:]
	}
	if len(seg) == 0 || len(seg) > 2 || (seg[0] != "nodes" && seg[0] != "pods") || (seg[0] == "nodes" && ns != "") {
		writeStatus(w, notFound("the server could not find the requested resource"))
		return true
	}
	name := ""
	if len(seg) == 2 {
		name = seg[1]
	}
	var err error
	if seg[0] == "nodes" {
		err = h.nodeMetrics(w, r, name)
	} else {
		err = h.podMetrics(w, r, ns, name)
	}
	if err != nil {
		writeStatus(w, statusOf(err, target{group: metricsGroup, resource: seg[0], name: name}))
	}
	return true
}

// stats asks every node with a tunnel (or just node) for its stats.
func (h *Handler) stats(ctx context.Context, node string) ([]*v1.StatsResponse, error) {
	names := []string{node}
	if node == "" {
		objs, _, err := h.listObjects(ctx, &v1.ListRequest{Kind: "Node"})
		if err != nil {
			return nil, err
		}
		names = names[:0]
		for _, o := range objs {
			names = append(names, o.GetMetadata().GetName())
		}
	}
	var out []*v1.StatsResponse
	for _, n := range names {
		req := &v1.StatsRequest{NodeName: n}
		resp, err := h.b.Call(ctx, nodeService+"Stats", req, func(ctx context.Context) (any, error) { return h.b.Nodes().Stats(ctx, req) })
		switch err := apierrors.FromGRPC(err); {
		case err == nil:
			out = append(out, resp.(*v1.StatsResponse))
		case node == "" && errors.Is(err, apierrors.ErrUnavailable):
			continue // no tunnel: not scraped
		default:
			return nil, err
		}
	}
	return out, nil
}

func usage(u *v1.ResourceUsage) map[string]string {
	return map[string]string{"cpu": fmt.Sprintf("%dm", u.GetCpuMilli()), "memory": fmt.Sprintf("%dKi", u.GetMemoryBytes()/1024)}
}

func metricsItem(name, ns string, at time.Time) map[string]any {
	md := map[string]any{"name": name, "creationTimestamp": at.UTC().Format(time.RFC3339)}
	if ns != "" {
		md["namespace"] = ns
	}
	return map[string]any{"metadata": md, "timestamp": at.UTC().Format(time.RFC3339), "window": "10s"}
}

func (h *Handler) nodeMetrics(w http.ResponseWriter, r *http.Request, name string) error {
	all, err := h.stats(r.Context(), name)
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, s := range all {
		it := metricsItem(s.NodeName, "", s.GetTime().AsTime())
		it["usage"] = usage(s.GetNode())
		items = append(items, it)
	}
	return writeMetrics(w, "NodeMetrics", name, items)
}

func (h *Handler) podMetrics(w http.ResponseWriter, r *http.Request, ns, name string) error {
	all, err := h.stats(r.Context(), "")
	if err != nil {
		return err
	}
	var items []map[string]any
	for _, s := range all {
		for _, p := range s.GetPods() {
			if ns != "" && p.Namespace != ns || name != "" && p.Name != name {
				continue
			}
			it := metricsItem(p.Name, p.Namespace, s.GetTime().AsTime())
			var cs []map[string]any
			for _, c := range sortedKeys(p.Containers) {
				cs = append(cs, map[string]any{"name": c, "usage": usage(p.Containers[c])})
			}
			it["containers"] = cs
			items = append(items, it)
		}
	}
	return writeMetrics(w, "PodMetrics", name, items)
}

// writeMetrics answers one item (when name is set) or the list.
func writeMetrics(w http.ResponseWriter, kind, name string, items []map[string]any) error {
	if name != "" {
		if len(items) == 0 {
			return apierrors.New(apierrors.ErrNotFound, "%s %q not found (no stats from its node)", strings.ToLower(kind), name)
		}
		items[0]["kind"], items[0]["apiVersion"] = kind, metricsGroup+"/v1beta1"
		writeJSON(w, http.StatusOK, items[0])
		return nil
	}
	if items == nil {
		items = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": kind + "List", "apiVersion": metricsGroup + "/v1beta1", "metadata": map[string]any{}, "items": items})
	return nil
}
