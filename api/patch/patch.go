// Package patch applies the three patch types of the Kubernetes API to
// Kubernetes-shaped JSON (the form api/manifest reads and writes): JSON
// merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch.
// Both front doors use it: the apiserver's Patch verb (gRPC and the
// Kubernetes HTTP API) and tugctl.
//
// Strategic merge patch merges lists of messages element by element, by a
// merge key (containers by name, ports by containerPort), where a merge
// patch replaces them whole. Which lists merge, and by which key, is read
// from the protobuf field options patch_merge_key and patch_strategy
// (api/v1/options.proto) through a LookupPatchMeta over the kind's
// descriptor, and the merge itself is k8s.io/apimachinery's strategicpatch,
// the code kube-apiserver runs: the semantics ($patch: delete/replace,
// $setElementOrder, $retainKeys, $deleteFromPrimitiveList) are Kubernetes'
// own, and the keys live beside the fields they describe, where the OpenAPI
// documents read them too (x-kubernetes-patch-merge-key).
//
// Contract: Apply never changes its inputs; on error nothing is returned,
// and the error says what in the patch is wrong (ErrInvalid). The result
// is JSON still to be decoded and validated by the caller.
package patch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Type is a patch type, as the Objects.Patch request names it.
type Type string

const (
	Merge     Type = "merge"
	JSON      Type = "json"
	Strategic Type = "strategic"
	// ServerSideApply is done by the apiserver's field manager, not by
	// Apply: the patch is a manager's whole intent (Objects.Patch).
	ServerSideApply Type = "apply"
)

// Content types of the HTTP API for each Type.
var contentTypes = map[string]Type{
	"application/merge-patch+json":           Merge,
	"application/json-patch+json":            JSON,
	"application/strategic-merge-patch+json": Strategic,
	"application/apply-patch+yaml":           ServerSideApply,
}

// ForContentType maps an HTTP Content-Type to its patch type.
func ForContentType(ct string) (Type, error) {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.TrimSpace(ct)
	}
	if t, ok := contentTypes[mt]; ok {
		return t, nil
	}
	return "", apierrors.New(apierrors.ErrInvalid, "the patch content type %q is not supported: use application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json or application/apply-patch+yaml", ct)
}

// ContentType is t's HTTP Content-Type.
func (t Type) ContentType() string {
	for ct, tt := range contentTypes {
		if tt == t {
			return ct
		}
	}
	return ""
}

// Parse checks a patch type's name ("merge", "json", "strategic").
func Parse(s string) (Type, error) {
	switch t := Type(s); t {
	case Merge, JSON, Strategic, ServerSideApply:
		return t, nil
	}
	return "", apierrors.Invalid("type", "%q is not a patch type: use merge, json, strategic or apply", s)
}

// Apply applies patch of type t to original, the JSON of an object whose
// message is md, and returns the patched JSON.
func Apply(md protoreflect.MessageDescriptor, t Type, original, patch []byte) ([]byte, error) {
	if len(bytes.TrimSpace(patch)) == 0 {
		return nil, apierrors.Invalid("patch", "empty patch")
	}
	var out []byte
	var err error
	switch t {
	case Merge:
		if err := wantObject(patch); err != nil {
			return nil, err
		}
		out, err = jsonpatch.MergePatch(original, patch)
	case JSON:
		var p jsonpatch.Patch
		p, err = jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.Invalid("patch", "not a JSON patch (a list of operations): %v", err)
		}
		out, err = p.Apply(original)
	case Strategic:
		if err := wantObject(patch); err != nil {
			return nil, err
		}
		out, err = strategicpatch.StrategicMergePatchUsingLookupPatchMeta(original, patch, Meta(md))
	default:
		return nil, apierrors.Invalid("type", "%q is not a patch type", t)
	}
	if err != nil {
		return nil, apierrors.Invalid("patch", "%s patch does not apply: %v", t, err)
	}
	return out, nil
}

// wantObject checks that a merge or strategic patch is a JSON object.
func wantObject(patch []byte) error {
	var v any
	if err := json.Unmarshal(patch, &v); err != nil {
		return apierrors.Invalid("patch", "invalid JSON: %v", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return apierrors.Invalid("patch", "a merge patch must be a JSON object, got %s", describe(v))
	}
	return nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}
