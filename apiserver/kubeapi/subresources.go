package kubeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

func anyOf(obj v1.Object) (*anypb.Any, error) { return anypb.New(obj) }

// bind serves POST pods/NAME/binding (a v1 Binding) with Objects.Bind.
func (h *Handler) bind(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r)
	}
	var b struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
	}
	if err := jsonBody(r, &b); err != nil {
		return err
	}
	if b.Metadata.Name != "" && b.Metadata.Name != q.name {
		return apierrors.New(apierrors.ErrBadRequest, "the name of the binding (%s) does not match the name on the URL (%s)", b.Metadata.Name, q.name)
	}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return apierrors.Invalid("target.kind", "%q: a pod binds to a Node", b.Target.Kind)
	}
	rv, err := resourceVersion(b.Metadata.ResourceVersion)
	if err != nil {
		return err
	}
	req := &v1.BindRequest{Namespace: q.namespace, Name: q.name, NodeName: b.Target.Name, ResourceVersion: rv}
	if _, err := h.call(r.Context(), "Bind", req, func(ctx context.Context) (any, error) { return h.b.Objects().Bind(ctx, req) }); err != nil {
		return err
	}
	st := success(q.target())
	st.Code = http.StatusCreated
	writeJSON(w, http.StatusCreated, st)
	return nil
}

// evict serves POST pods/NAME/eviction (a policy/v1 Eviction) with
// Objects.Evict: authorized as create on pods/eviction, the apiserver's
// eviction checks (the disruption budgets) run first, and a refusal is 429
// TooManyRequests naming the budget.
func (h *Handler) evict(w http.ResponseWriter, r *http.Request, q *request) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r)
	}
	var e struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		DeleteOptions *deleteOptions `json:"deleteOptions"`
	}
	if err := jsonBody(r, &e); err != nil {
		return err
	}
	if e.Metadata.Name != "" && e.Metadata.Name != q.name {
		return apierrors.New(apierrors.ErrBadRequest, "the name of the eviction (%s) does not match the name on the URL (%s)", e.Metadata.Name, q.name)
	}
	if e.DeleteOptions == nil {
		e.DeleteOptions = &deleteOptions{}
	}
	req, err := e.DeleteOptions.request(r, q)
	if err != nil {
		return err
	}
	if _, err := h.call(r.Context(), "Evict", req, func(ctx context.Context) (any, error) { return h.b.Objects().Evict(ctx, req) }); err != nil {
		return err
	}
	st := success(q.target())
	st.Code = http.StatusCreated
	writeJSON(w, http.StatusCreated, st)
	return nil
}

// createSubresource serves POST of a subresource made with a body of its
// own (kinds.Subresource: serviceaccounts/NAME/token with a TokenRequest)
// with Objects.Create: the body is read strictly (an unknown field is
// refused), and the answer is the body as the server completed it, 201.
func (h *Handler) createSubresource(w http.ResponseWriter, r *http.Request, q *request, sub *kinds.Subresource) error {
	if r.Method != http.MethodPost {
		return methodNotAllowed(r)
	}
	body, err := readBody(r)
	if err != nil {
		return err
	}
	msg := sub.New()
	if len(strings.TrimSpace(string(body))) > 0 {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err != nil {
			return apierrors.New(apierrors.ErrBadRequest, "invalid JSON in the body: %v", err)
		}
		var apiVersion, kind string
		_ = json.Unmarshal(top["apiVersion"], &apiVersion)
		_ = json.Unmarshal(top["kind"], &kind)
		if apiVersion != "" && apiVersion != sub.APIVersion || kind != "" && kind != sub.Kind {
			return apierrors.New(apierrors.ErrBadRequest, "the body is a %s (%s), but %s/%s takes a %s (%s)", kind, apiVersion, q.res.kind.Plural, sub.Name, sub.Kind, sub.APIVersion)
		}
		delete(top, "apiVersion")
		delete(top, "kind")
		rest, _ := json.Marshal(top)
		if err := protojson.Unmarshal(rest, msg); err != nil {
			return apierrors.New(apierrors.ErrBadRequest, "the body is not a valid %s: %v", sub.Kind, err)
		}
	}
	dry, err := dryRun(r)
	if err != nil {
		return err
	}
	a, err := anypb.New(msg)
	if err != nil {
		return err
	}
	req := &v1.CreateRequest{Object: a, Kind: q.res.kind.Name, Namespace: q.namespace, Name: q.name, Subresource: sub.Name, DryRun: dry}
	out, err := h.b.Call(r.Context(), objectsService+"Create", req, func(ctx context.Context) (any, error) { return h.b.Objects().Create(ctx, req) })
	if err != nil {
		return apierrors.FromGRPC(err)
	}
	an, ok := out.(*anypb.Any)
	if !ok || an == nil {
		return fmt.Errorf("the backend answered %T, not a %s", out, sub.Kind)
	}
	res := sub.New()
	if err := an.UnmarshalTo(res); err != nil {
		return err
	}
	m, err := manifest.MessageToMap(res, sub.APIVersion, sub.Kind)
	if err != nil {
		return err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	if _, ok := meta["creationTimestamp"]; !ok {
		meta["creationTimestamp"] = nil
	}
	writeJSON(w, http.StatusCreated, m)
	return nil
}
