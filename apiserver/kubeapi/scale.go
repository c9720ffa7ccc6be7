package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The scale subresource (autoscaling/v1 Scale) of every kind with
// spec.replicas and spec.selector. It is read with Objects.Get and written
// with Objects.Update of the object (a compare-and-swap on the version
// read), so it is authorized as get and update of the kind.

type scaleObject struct {
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
	Status struct {
		Replicas int32  `json:"replicas"`
		Selector string `json:"selector,omitempty"`
	} `json:"status"`
}

func scaleOf(sc *kinds.Scale, obj v1.Object) (*scaleObject, error) {
	m, err := encode(obj)
	if err != nil {
		return nil, err
	}
	md, _ := m["metadata"].(map[string]any)
	s := &scaleObject{Kind: "Scale", APIVersion: "autoscaling/v1", Metadata: map[string]any{}}
	for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "creationTimestamp"} {
		if v, ok := md[k]; ok {
			s.Metadata[k] = v
		}
	}
	s.Spec.Replicas = sc.Replicas(obj)
	s.Status.Replicas = sc.CurrentReplicas(obj)
	s.Status.Selector = selectorString(sc.LabelSelector(obj))
	return s, nil
}

func (h *Handler) scale(w http.ResponseWriter, r *http.Request, q *request) error {
	if !q.res.scalable {
		return apierrors.New(apierrors.ErrNotFound, "%s have no scale subresource", q.res.kind.Plural)
	}
	ctx := r.Context()
	obj, err := h.getObject(ctx, &request{res: q.res, namespace: q.namespace, name: q.name})
	if err != nil {
		return err
	}
	cur, err := scaleOf(q.res.kind.Scale, obj)
	if err != nil {
		return err
	}
	var want *scaleObject
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, cur)
		return nil
	case http.MethodPut:
		want = &scaleObject{}
		if err := jsonBody(r, want); err != nil {
			return err
		}
		if rv, _ := want.Metadata["resourceVersion"].(string); rv != "" && rv != fmt.Sprint(obj.GetMetadata().GetResourceVersion()) {
			return apierrors.Conflict(q.res.kind.GroupResource(), q.name)
		}
	case http.MethodPatch:
		t, err := patchType(r)
		if err != nil {
			return err
		}
		body, err := readBody(r)
		if err != nil {
			return err
		}
		orig, _ := json.Marshal(cur)
		out, err := patch.Apply(nil, t, orig, body)
		if err != nil {
			return err
		}
		want = &scaleObject{}
		if err := json.Unmarshal(out, want); err != nil {
			return apierrors.Invalid("spec.replicas", "%v", err)
		}
	default:
		return methodNotAllowed(r)
	}
	if want.Spec.Replicas < 0 {
		return apierrors.Invalid("spec.replicas", "must be greater than or equal to 0")
	}
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	next := clone(obj)
	q.res.kind.Scale.SetReplicas(next, want.Spec.Replicas)
	updated, err := h.updateObject(ctx, next, dry)
	if err != nil {
		return err
	}
	s, err := scaleOf(q.res.kind.Scale, updated)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

// updateObject stores obj with Objects.Update (a compare-and-swap on its
// resourceVersion).
func (h *Handler) updateObject(ctx context.Context, obj v1.Object, dry bool) (v1.Object, error) {
	a, err := anyOf(obj)
	if err != nil {
		return nil, err
	}
	req := &v1.UpdateRequest{Object: a, DryRun: dry}
	return h.call(ctx, "Update", req, func(ctx context.Context) (any, error) { return h.b.Objects().Update(ctx, req) })
}

// selectorString writes a label selector as Kubernetes' Scale
// status.selector does: "app=web,tier in (a,b)".
func selectorString(s *v1.LabelSelector) string {
	if s == nil {
		return ""
	}
	var parts []string
	keys := make([]string, 0, len(s.MatchLabels))
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, k+"="+s.MatchLabels[k])
	}
	for _, e := range s.MatchExpressions {
		switch e.Operator {
		case "In":
			parts = append(parts, e.Key+" in ("+strings.Join(e.Values, ",")+")")
		case "NotIn":
			parts = append(parts, e.Key+" notin ("+strings.Join(e.Values, ",")+")")
		case "Exists":
			parts = append(parts, e.Key)
		case "DoesNotExist":
			parts = append(parts, "!"+e.Key)
		}
	}
	return strings.Join(parts, ",")
}
