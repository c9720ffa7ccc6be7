package kubeapi

import (
	"context"
	"net/http"

	"github.com/tugboat/tugboat/api/apierrors"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The review resources: nothing is stored, the answer is computed. kubectl
// auth can-i posts a SelfSubjectAccessReview, kubectl auth whoami a
// SelfSubjectReview; both are answered by the gRPC Auth service (Review,
// WhoAmI), so can-i says what the authorizer would decide.

const authService = "/tugboat.api.v1.Auth/"

// virtualGroup is an API group whose resources are computed, not stored:
// the reviews (here) and the resource metrics (metricsapi.go).
type virtualGroup struct {
	version   string
	resources []apiResource
}

// virtualGroups are those groups, for discovery.
var virtualGroups = map[string]virtualGroup{
	"authorization.k8s.io":  {"v1", []apiResource{{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview", Verbs: []string{"create"}}}},
	"authentication.k8s.io": {"v1", []apiResource{{Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview", Verbs: []string{"create"}}}},
	metricsGroup:            {"v1beta1", metricsResources},
}

// review serves POST of a review resource; ok is false for other paths.
func (h *Handler) review(w http.ResponseWriter, r *http.Request, path string) bool {
	switch path {
	case "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews":
		h.accessReview(w, r)
	case "/apis/authentication.k8s.io/v1/selfsubjectreviews":
		h.whoAmI(w, r)
	default:
		return false
	}
	return true
}

type accessReview struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   map[string]any `json:"metadata"`
	Spec       struct {
		ResourceAttributes *struct {
			Namespace   string `json:"namespace,omitempty"`
			Verb        string `json:"verb,omitempty"`
			Group       string `json:"group,omitempty"`
			Version     string `json:"version,omitempty"`
			Resource    string `json:"resource,omitempty"`
			Subresource string `json:"subresource,omitempty"`
			Name        string `json:"name,omitempty"`
		} `json:"resourceAttributes,omitempty"`
		NonResourceAttributes *struct {
			Path string `json:"path,omitempty"`
			Verb string `json:"verb,omitempty"`
		} `json:"nonResourceAttributes,omitempty"`
	} `json:"spec"`
	Status struct {
		Allowed bool   `json:"allowed"`
		Denied  bool   `json:"denied,omitempty"`
		Reason  string `json:"reason,omitempty"`
	} `json:"status"`
}

func (h *Handler) accessReview(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeStatus(w, statusOf(methodNotAllowed(r), target{}))
		return
	}
	var rev accessReview
	if err := jsonBody(r, &rev); err != nil {
		writeStatus(w, statusOf(err, target{}))
		return
	}
	ra := rev.Spec.ResourceAttributes
	switch {
	case ra != nil:
		resource := ra.Resource
		if ra.Subresource != "" {
			resource += "/" + ra.Subresource
		}
		req := &v1.AccessReviewRequest{Verb: ra.Verb, Resource: resource, Namespace: ra.Namespace, Name: ra.Name}
		out, err := h.b.Call(r.Context(), authService+"Review", req, func(ctx context.Context) (any, error) { return h.b.Auth().Review(ctx, req) })
		if err != nil {
			err = apierrors.FromGRPC(err)
			if !apierrors.IsInvalid(err) {
				writeStatus(w, statusOf(err, target{}))
				return
			}
			// A resource Tugboat does not serve: nobody may act on it.
			rev.Status.Allowed, rev.Status.Reason = false, err.Error()
		} else {
			resp := out.(*v1.AccessReviewResponse)
			rev.Status.Allowed, rev.Status.Reason = resp.Allowed, resp.Reason
		}
	case rev.Spec.NonResourceAttributes != nil:
		rev.Status.Reason = "Tugboat authorizes no non-resource URLs beyond discovery, /version and the health checks"
	default:
		writeStatus(w, statusOf(apierrors.Invalid("spec", "resourceAttributes or nonResourceAttributes is required"), target{}))
		return
	}
	rev.APIVersion, rev.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	if rev.Metadata == nil {
		rev.Metadata = map[string]any{}
	}
	writeJSON(w, http.StatusCreated, rev)
}

func (h *Handler) whoAmI(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeStatus(w, statusOf(methodNotAllowed(r), target{}))
		return
	}
	req := &v1.WhoAmIRequest{}
	out, err := h.b.Call(r.Context(), authService+"WhoAmI", req, func(ctx context.Context) (any, error) { return h.b.Auth().WhoAmI(ctx, req) })
	if err != nil {
		writeStatus(w, statusOf(err, target{}))
		return
	}
	u := out.(*v1.UserInfo)
	info := map[string]any{"username": u.Name, "groups": u.Groups}
	if u.Uid != "" {
		info["uid"] = u.Uid
	}
	if len(u.Extra) > 0 {
		extra := map[string][]string{}
		for k, v := range u.Extra {
			extra[k] = v.GetValues()
		}
		info["extra"] = extra
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": map[string]any{},
		"status": map[string]any{"userInfo": info},
	})
}
