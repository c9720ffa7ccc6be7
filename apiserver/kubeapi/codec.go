package kubeapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// maxBodyBytes is kube-apiserver's request body limit (3 MiB).
const maxBodyBytes = 3 << 20

// errTooLarge is a body over maxBodyBytes: 413.
var errTooLarge = errors.New("request entity too large")

// readBody reads a request body up to maxBodyBytes, as JSON: a
// Kubernetes protobuf body is converted (protobuf.go).
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, apierrors.New(apierrors.ErrBadRequest, "reading the request body: %v", err)
	}
	if len(b) > maxBodyBytes {
		return nil, errTooLarge
	}
	if isProtobuf(r.Header.Get("Content-Type")) && len(b) > 0 {
		return protobufToJSON(b)
	}
	return b, nil
}

func tooLarge() *Status {
	return &Status{Kind: "Status", APIVersion: "v1", Status: "Failure", Code: http.StatusRequestEntityTooLarge,
		Reason: "RequestEntityTooLarge", Message: fmt.Sprintf("Request entity too large: limit is %d", maxBodyBytes)}
}

// fieldValidation reads the fieldValidation parameter: Strict and Warn
// refuse a field the kind does not have (Tugboat never drops a field it
// does not implement unasked, see the package doc of api/manifest);
// Ignore drops it and says so in a Warning header.
func fieldValidation(r *http.Request) (ignore bool, err error) {
	switch v := r.URL.Query().Get("fieldValidation"); v {
	case "", "Strict", "Warn":
		return false, nil
	case "Ignore":
		return true, nil
	default:
		return false, apierrors.New(apierrors.ErrBadRequest, "fieldValidation %q: want Strict, Warn or Ignore", v)
	}
}

// dryRun reads the dryRun parameter: All, or nothing.
func dryRun(r *http.Request) (bool, error) {
	vs := r.URL.Query()["dryRun"]
	for _, v := range vs {
		if v != "All" {
			return false, apierrors.New(apierrors.ErrBadRequest, "dryRun %q: the only supported value is All", v)
		}
	}
	return len(vs) > 0, nil
}

// decodeBody reads an object of resource res from the body with the
// manifest codec.
func decodeBody(w http.ResponseWriter, r *http.Request, res *resource) (v1.Object, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "*/*") && !isProtobuf(ct) {
		return nil, apierrors.New(errUnsupportedMedia, "the body's Content-Type %q is not supported: send application/json", ct)
	}
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	ignore, err := fieldValidation(r)
	if err != nil {
		return nil, err
	}
	o, unknown, err := manifest.DecodeObject(body, manifest.ObjectOptions{IgnoreUnknown: ignore, APIVersion: res.groupVersion(), Kind: res.kind.Name})
	if err != nil {
		return nil, err
	}
	if o.Kind != res.kind {
		return nil, apierrors.New(apierrors.ErrBadRequest, "the body is a %s (%s), but the request is for %s (%s)", o.Kind.Name, o.Kind.APIVersion, res.kind.Plural, res.groupVersion())
	}
	for _, f := range unknown {
		w.Header().Add("Warning", fmt.Sprintf(`299 - "unknown field %q"`, f))
	}
	return o.Object, nil
}

// unpack turns an Any from the backend into an object.
func unpack(a any) (v1.Object, error) {
	an, ok := a.(*anypb.Any)
	if !ok || an == nil {
		return nil, fmt.Errorf("the backend answered %T, not an object", a)
	}
	m, err := an.UnmarshalNew()
	if err != nil {
		return nil, err
	}
	o, ok := m.(v1.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", an.TypeUrl)
	}
	return o, nil
}

// encode is obj's Kubernetes-shaped JSON map (a ControllerRevision's data
// as kubectl makes it: kubectlRevisionData).
func encode(obj v1.Object) (map[string]any, error) {
	m, err := manifest.ToMap(obj)
	if err != nil {
		return nil, err
	}
	if _, ok := obj.(*v1.ControllerRevision); ok {
		if d, ok := kubectlRevisionData(m["data"]); ok {
			m["data"] = d
		}
	}
	return m, nil
}

// accept is what the client asked for in its Accept header.
type accept struct {
	table   bool // as=Table;g=meta.k8s.io
	partial bool // as=PartialObjectMetadata(List)
}

func parseAccept(r *http.Request) accept {
	var a accept
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		switch {
		case strings.Contains(part, "as=Table"):
			a.table = true
		case strings.Contains(part, "as=PartialObjectMetadata"):
			a.partial = true
		}
		if a.table || a.partial {
			return a // the client's first choice that we serve
		}
	}
	return a
}

// writeObject answers one object: as a Table, PartialObjectMetadata or
// the object, as asked.
func (h *Handler) writeObject(w http.ResponseWriter, r *http.Request, code int, res *resource, obj v1.Object) {
	a := parseAccept(r)
	var body any
	var err error
	switch {
	case a.table:
		body, err = h.table(r, res, []v1.Object{obj}, "")
	case a.partial:
		body, err = partialMetadata(obj)
	default:
		body, err = encode(obj)
	}
	if err != nil {
		writeStatus(w, statusOf(err, target{}))
		return
	}
	writeJSON(w, code, body)
}

// partialMetadata is meta.k8s.io/v1 PartialObjectMetadata of obj.
func partialMetadata(obj v1.Object) (map[string]any, error) {
	m, err := encode(obj)
	if err != nil {
		return nil, err
	}
	return map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m["metadata"]}, nil
}

// listMeta is metav1.ListMeta.
type listMeta struct {
	ResourceVersion string `json:"resourceVersion"`
	Continue        string `json:"continue,omitempty"`
}

// writeList answers a list: a Table, a PartialObjectMetadataList or a
// KindList.
func (h *Handler) writeList(w http.ResponseWriter, r *http.Request, res *resource, objs []v1.Object, rev int64, cont string) {
	a := parseAccept(r)
	meta := listMeta{ResourceVersion: fmt.Sprint(rev), Continue: cont}
	if a.table {
		t, err := h.table(r, res, objs, meta.ResourceVersion)
		if err != nil {
			writeStatus(w, statusOf(err, target{}))
			return
		}
		t["metadata"] = meta
		writeJSON(w, http.StatusOK, t)
		return
	}
	items := make([]any, 0, len(objs))
	for _, o := range objs {
		var m map[string]any
		var err error
		if a.partial {
			m, err = partialMetadata(o)
		} else {
			m, err = encode(o)
		}
		if err != nil {
			writeStatus(w, statusOf(err, target{}))
			return
		}
		items = append(items, m)
	}
	kind, apiVersion := res.kind.Name+"List", res.groupVersion()
	if a.partial {
		kind, apiVersion = "PartialObjectMetadataList", "meta.k8s.io/v1"
	}
	writeJSON(w, http.StatusOK, map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": meta, "items": items})
}

// jsonBody decodes a small JSON request body (DeleteOptions, Eviction,
// Scale, Binding) into v; an empty body leaves v as it is.
func jsonBody(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return apierrors.New(apierrors.ErrBadRequest, "invalid JSON in the body: %v", err)
	}
	return nil
}
