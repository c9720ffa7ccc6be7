package kubeapi

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The scale subresource (autoscaling/v1 Scale) of every kind with
// spec.replicas and spec.selector. It is read with Objects.Get and written
// with Objects.Update or Objects.Patch, each with subresource "scale", so it
// is authorized as get, update and patch on <resource>/scale, as in
// Kubernetes, and a write changes spec.replicas only.

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
	k := q.res.kind
	var out v1.Object
	var err error
	switch r.Method {
	case http.MethodGet:
		req := &v1.GetRequest{Kind: k.Name, Namespace: q.namespace, Name: q.name, Subresource: "scale"}
		out, err = h.call(ctx, "Get", req, func(ctx context.Context) (any, error) { return h.b.Objects().Get(ctx, req) })
	case http.MethodPut:
		want := &scaleObject{}
		if err := jsonBody(r, want); err != nil {
			return err
		}
		if want.Spec.Replicas < 0 {
			return apierrors.Invalid("spec.replicas", "must be greater than or equal to 0")
		}
		obj := k.New()
		m := v1.Meta(obj)
		m.Namespace, m.Name = q.namespace, q.name
		if rv, _ := want.Metadata["resourceVersion"].(string); rv != "" {
			if m.ResourceVersion, err = strconv.ParseInt(rv, 10, 64); err != nil {
				return apierrors.Invalid("metadata.resourceVersion", "%q: not a resource version", rv)
			}
		}
		k.Scale.SetReplicas(obj, want.Spec.Replicas)
		dry, err := dryRun(r)
		if err != nil {
			return err
		}
		a, err := anyOf(obj)
		if err != nil {
			return err
		}
		req := &v1.UpdateRequest{Object: a, DryRun: dry, Subresource: "scale", FieldManager: r.URL.Query().Get("fieldManager")}
		out, err = h.call(ctx, "Update", req, func(ctx context.Context) (any, error) { return h.b.Objects().Update(ctx, req) })
		if err != nil { // err of this case's scope
			return err
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
		dry, err := dryRun(r)
		if err != nil {
			return err
		}
		req := &v1.PatchRequest{Kind: k.Name, Namespace: q.namespace, Name: q.name, Type: string(t), Patch: body, Subresource: "scale", DryRun: dry, FieldManager: r.URL.Query().Get("fieldManager")}
		out, err = h.call(ctx, "Patch", req, func(ctx context.Context) (any, error) { return h.b.Objects().Patch(ctx, req) })
		if err != nil { // err of this case's scope
			return err
		}
	default:
		return methodNotAllowed(r)
	}
	if err != nil {
		return err
	}
	s, err := scaleOf(k.Scale, out)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s)
	return nil
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
