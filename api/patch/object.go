package patch

import (
	"encoding/json"

	"github.com/tugboat/tugboat/api/apierrors"
	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Object applies a patch of type t to obj and decodes the result with the
// manifest codec (so a patch cannot set a field a manifest could not). The
// result must still be the same object: same kind, name and namespace.
// obj is not changed. The apiserver's Patch verb runs this on the stored
// object; tugctl's --dry-run=client on the object it read.
func Object(obj v1.Object, t Type, p []byte) (v1.Object, error) {
	m, err := manifest.ToMap(obj)
	if err != nil {
		return nil, err
	}
	orig, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	patched, err := Apply(obj.ProtoReflect().Descriptor(), t, orig, p)
	if err != nil {
		return nil, err
	}
	dec, _, err := manifest.DecodeObject(patched, manifest.ObjectOptions{})
	if err != nil {
		return nil, err
	}
	if want := obj.ProtoReflect().Descriptor().FullName(); dec.Object.ProtoReflect().Descriptor().FullName() != want {
		return nil, apierrors.Invalid("kind", "a patch may not change the kind (%s to %s)", want.Name(), dec.Kind.Name)
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
