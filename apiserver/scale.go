package apiserver

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// The scale subresource, as Kubernetes serves it: reading and writing a
// kind's replica count is authorized as get, update and patch on
// <resource>/scale ("deployments/scale"), not on the kind, so an
// autoscaler or an operator can be given the count and nothing else of the
// object. A write through it changes spec.replicas only; everything else is
// kept as stored.

// scaleSubresource checks that kind k has the scale subresource.
func scaleSubresource(k *kinds.Kind) error {
	if k.Scale == nil {
		return apierrors.New(apierrors.ErrNotFound, "%s have no scale subresource", k.Plural)
	}
	return nil
}

// withReplicas is cur with spec.replicas set to n (validated later with the
// kind's validation, which refuses a negative count).
func withReplicas(k *kinds.Kind, cur v1.Object, n int32) v1.Object {
	next := proto.Clone(cur).(v1.Object)
	k.Scale.SetReplicas(next, n)
	return next
}

// scaleDocument is the autoscaling/v1 Scale of obj a patch of the scale
// subresource applies to.
func scaleDocument(k *kinds.Kind, obj v1.Object) ([]byte, error) {
	m := obj.GetMetadata()
	doc := map[string]any{
		"apiVersion": "autoscaling/v1",
		"kind":       "Scale",
		"metadata":   map[string]any{"name": m.GetName(), "namespace": m.GetNamespace(), "uid": m.GetUid(), "resourceVersion": fmt.Sprint(m.GetResourceVersion())},
		"spec":       map[string]any{"replicas": k.Scale.Replicas(obj)},
		"status":     map[string]any{"replicas": k.Scale.CurrentReplicas(obj)},
	}
	return json.Marshal(doc)
}

// patchScale applies a patch of type t to cur's Scale and returns cur with
// the patched replica count.
func patchScale(k *kinds.Kind, cur v1.Object, t patch.Type, p []byte) (v1.Object, error) {
	orig, err := scaleDocument(k, cur)
	if err != nil {
		return nil, err
	}
	out, err := patch.Apply(nil, t, orig, p)
	if err != nil {
		return nil, err
	}
	var s struct {
		Spec struct {
			Replicas *int32 `json:"replicas"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, apierrors.Invalid("spec.replicas", "%v", err)
	}
	if s.Spec.Replicas == nil {
		return nil, apierrors.Invalid("spec.replicas", "required")
	}
	return withReplicas(k, cur, *s.Spec.Replicas), nil
}
