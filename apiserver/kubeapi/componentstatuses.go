package kubeapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/componentstatus"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ComponentStatus (v1, deprecated in Kubernetes but still what `kubectl
// get cs` reads): a read-only list computed on each request, as
// kube-apiserver computes it by probing, here from the gRPC Cluster.Status
// call (every apiserver, every etcd member, the scheduler's and the
// controller-manager's leaders) turned into items by package
// api/componentstatus. Only get and list: there is nothing stored to
// write or watch.

const clusterService = "/tugboat.api.v1.Cluster/"

// componentStatusResource is its discovery entry in the core group.
var componentStatusResource = apiResource{Name: "componentstatuses", SingularName: "componentstatus", Kind: "ComponentStatus",
	Verbs: []string{"get", "list"}, ShortNames: []string{"cs"}}

// componentStatuses serves /api/v1/componentstatuses[/NAME]; ok is false
// for other paths.
func (h *Handler) componentStatuses(w http.ResponseWriter, r *http.Request, path string) bool {
	rest, ok := strings.CutPrefix(path, "/api/v1/componentstatuses")
	if !ok || rest != "" && !strings.HasPrefix(rest, "/") {
		return false
	}
	name := strings.TrimPrefix(rest, "/")
	t := target{resource: "componentstatuses", name: name}
	if r.Method != http.MethodGet || strings.Contains(name, "/") || r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		writeStatus(w, statusOf(methodNotAllowed(r), t))
		return true
	}
	// As kube-apiserver warns (kubectl prints it).
	w.Header().Add("Warning", `299 - "v1 ComponentStatus is deprecated in v1.19+"`)
	req := &v1.ClusterStatusRequest{Name: name} // list, or get of one: authorized as such
	out, err := h.b.Call(r.Context(), clusterService+"Status", req, func(ctx context.Context) (any, error) { return h.b.Cluster().Status(ctx, req) })
	if err != nil {
		writeStatus(w, statusOf(err, t))
		return true
	}
	items := componentstatus.Items(out.(*v1.ClusterStatus))
	if name != "" {
		if len(items) != 1 || items[0].Name() != name {
			writeStatus(w, statusOf(apierrors.New(apierrors.ErrNotFound, "componentstatuses %q not found", name), t))
			return true
		}
		writeJSON(w, http.StatusOK, items[0])
		return true
	}
	if parseAccept(r).table {
		writeJSON(w, http.StatusOK, componentStatusTable(items))
		return true
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": listMeta{}, "items": items})
	return true
}

// componentStatusTable is kube-apiserver's table of them: NAME, STATUS
// (Healthy or Unhealthy), MESSAGE, ERROR.
func componentStatusTable(items []componentstatus.Item) map[string]any {
	cols := []map[string]any{
		{"name": "Name", "type": "string", "format": "name", "description": "Name of the component."},
		{"name": "Status", "type": "string", "description": "Status of the component conditions"},
		{"name": "Message", "type": "string", "description": "Message of the component conditions"},
		{"name": "Error", "type": "string", "description": "Error of the component conditions"},
	}
	rows := make([]map[string]any, 0, len(items))
	for _, it := range items {
		c := it.Conditions[0]
		rows = append(rows, map[string]any{
			"cells":  []any{it.Name(), it.StatusText(), c.Message, c.Error},
			"object": map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": it.Metadata},
		})
	}
	return map[string]any{"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": listMeta{}, "columnDefinitions": cols, "rows": rows}
}
