package apiserver

import (
	"context"
	"encoding/json"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/manifest"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// Patch implements Objects.Patch: the patch is applied to the stored
// object's Kubernetes-shaped JSON, the result decoded by the manifest codec
// (so a patch cannot set a field a manifest could not) and stored as an
// Update or UpdateStatus, re-applied to the newer object when a
// compare-and-swap loses.
func (s *Server) Patch(ctx context.Context, req *v1.PatchRequest) (*anypb.Any, error) {
	k, err := lookupKind(req.Kind)
	if err != nil {
		return nil, err
	}
	t, err := patch.Parse(req.Type)
	if err != nil {
		return nil, err
	}
	statusOnly := false
	switch req.Subresource {
	case "":
	case "status":
		if !k.HasStatus() {
			return nil, apierrors.Invalid("subresource", "kind %s has no status", k.Name)
		}
		statusOnly = true
	default:
		return nil, apierrors.Invalid("subresource", "%q cannot be patched (only the object or its status)", req.Subresource)
	}
	if req.Name == "" {
		return nil, apierrors.Invalid("name", "required")
	}
	if len(req.Patch) > validation.MaxObjectBytes {
		return nil, apierrors.Invalid("patch", "%d bytes is larger than the limit of %d bytes", len(req.Patch), validation.MaxObjectBytes)
	}
	ns := namespaceOf(k, req.Namespace)
	if err := s.authorize(ctx, "patch", k, req.Subresource, ns, req.Name, ""); err != nil {
		return nil, err
	}
	in := k.New()
	m := v1.Meta(in)
	m.Namespace, m.Name, m.ResourceVersion = ns, req.Name, req.ResourceVersion
	out, err := s.updateFrom(ctx, k, in, statusOnly, req.DryRun, func(cur v1.Object) (v1.Object, error) {
		return ApplyPatch(k, cur, t, req.Patch)
	})
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// ApplyPatch applies a patch of type t to obj (of kind k) and decodes the
// result, which must still be the same object: same kind, name and
// namespace. obj is not changed.
func ApplyPatch(k *kinds.Kind, obj v1.Object, t patch.Type, p []byte) (v1.Object, error) {
	m, err := manifest.ToMap(obj)
	if err != nil {
		return nil, err
	}
	orig, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	patched, err := patch.Apply(obj.ProtoReflect().Descriptor(), t, orig, p)
	if err != nil {
		return nil, err
	}
	dec, _, err := manifest.DecodeObject(patched, manifest.ObjectOptions{})
	if err != nil {
		return nil, err
	}
	if dec.Kind != k {
		return nil, apierrors.Invalid("kind", "a patch may not change the kind (%s to %s)", k.Name, dec.Kind.Name)
	}
	om, nm := obj.GetMetadata(), dec.Object.GetMetadata()
	if nm.GetName() != om.GetName() {
		return nil, apierrors.Invalid("metadata.name", "a patch may not change the name (%q to %q)", om.GetName(), nm.GetName())
	}
	if nm.GetNamespace() != om.GetNamespace() {
		return nil, apierrors.Invalid("metadata.namespace", "a patch may not change the namespace (%q to %q)", om.GetNamespace(), nm.GetNamespace())
	}
	return dec.Object, nil
}
