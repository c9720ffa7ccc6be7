package apiserver

import (
	"context"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/kinds"
	"github.com/tugboat/tugboat/api/patch"
	v1 "github.com/tugboat/tugboat/api/v1"
	"github.com/tugboat/tugboat/api/validation"
)

// Patch implements Objects.Patch: the patch is applied to the stored
// object's Kubernetes-shaped JSON, the result decoded by the manifest codec
// (so a patch cannot set a field a manifest could not) and stored as an
// Update or UpdateStatus, re-applied to the newer object when a
// compare-and-swap loses (patch.Object).
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
	if req.Subresource == "status" {
		if !k.HasStatus() {
			return nil, apierrors.Invalid("subresource", "kind %s has no status", k.Name)
		}
		statusOnly = true
	} else if known, err := objectSubresource(k, req.Subresource); err != nil {
		return nil, err
	} else if !known {
		return nil, apierrors.Invalid("subresource", "%q cannot be patched (only the object, its status, its scale, or a pod's resize or ephemeralcontainers)", req.Subresource)
	}
	if req.Name == "" {
		return nil, apierrors.Invalid("name", "required")
	}
	if len(req.Patch) > validation.MaxObjectBytes {
		return nil, apierrors.Invalid("patch", "%d bytes is larger than the limit of %d bytes", len(req.Patch), validation.MaxObjectBytes)
	}
	if t == patch.ServerSideApply {
		if req.FieldManager == "" {
			return nil, apierrors.Invalid("fieldManager", "Required value: is required for apply patch")
		}
		if req.Subresource == "scale" || req.Subresource == "resize" {
			return nil, apierrors.Invalid("subresource", "server-side apply of %q is not supported (only the object and its status)", req.Subresource)
		}
	} else if req.Force {
		return nil, apierrors.Invalid("force", "Forbidden: may not be specified for non-apply patch")
	}
	ns := namespaceOf(k, req.Namespace)
	if err := s.authorize(ctx, "patch", k, req.Subresource, ns, req.Name, ""); err != nil {
		return nil, err
	}
	if t == patch.ServerSideApply {
		out, err := s.serverSideApply(ctx, k, ns, req)
		if err != nil {
			return nil, err
		}
		return pack(out)
	}
	owner, err := ownerOf(ctx, req.FieldManager, req.Subresource)
	if err != nil {
		return nil, err
	}
	in := k.New()
	m := v1.Meta(in)
	m.Namespace, m.Name, m.ResourceVersion = ns, req.Name, req.ResourceVersion
	sub := ""
	if statusOnly || req.Subresource == "resize" || req.Subresource == ephemeralContainers {
		sub = req.Subresource
	}
	out, err := s.updateFrom(ctx, k, in, sub, req.DryRun, owner, func(cur v1.Object) (v1.Object, error) {
		switch req.Subresource {
		case "scale":
			return patchScale(k, cur, t, req.Patch)
		case ephemeralContainers:
			// Kubernetes patches the whole pod and keeps only the
			// ephemeral containers of the result.
			user, err := patch.Object(cur, t, req.Patch)
			if err != nil {
				return nil, err
			}
			return withEphemeralContainers(cur, user), nil
		case "resize":
			patched, err := patch.Object(cur, t, req.Patch)
			if err != nil {
				return nil, err
			}
			return withResize(cur, patched)
		}
		return patch.Object(cur, t, req.Patch)
	})
	if err != nil {
		return nil, err
	}
	return pack(out)
}

// serverSideApply merges req's intent into the stored object, or creates
// it (with create permission too) when there is none; see apply.go. An
// apply to the status subresource (client-go's ApplyStatus) changes only
// status and the managedFields entries of its manager (subresource
// "status"), and needs the object to exist, as in Kubernetes.
func (s *Server) serverSideApply(ctx context.Context, k *kinds.Kind, ns string, req *v1.PatchRequest) (v1.Object, error) {
	statusOnly := req.Subresource == "status"
	fm, err := s.applier.forKind(k, req.Subresource)
	if err != nil {
		return nil, err
	}
	intent, err := applyPatch(k, ns, req.Name, req.Patch)
	if err != nil {
		return nil, err
	}
	in := k.New()
	m := v1.Meta(in)
	m.Namespace, m.Name, m.ResourceVersion = ns, req.Name, req.ResourceVersion
	sub := ""
	if statusOnly {
		sub = "status"
	}
	out, err := s.updateFrom(ctx, k, in, sub, req.DryRun, fieldOwner{applied: true}, func(cur v1.Object) (v1.Object, error) {
		return applyTo(fm, k, cur, intent, req.FieldManager, req.Force)
	})
	if !apierrors.IsNotFound(err) || req.ResourceVersion != 0 || statusOnly {
		return out, err
	}
	if err := s.authorize(ctx, "create", k, "", ns, req.Name, ""); err != nil {
		return nil, err
	}
	obj, err := applyTo(fm, k, nil, intent, req.FieldManager, req.Force)
	if err != nil {
		return nil, err
	}
	return s.create(ctx, obj, req.DryRun)
}
