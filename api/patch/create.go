package patch

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/tugboat/tugboat/api/apierrors"
)

// Making patches: the client side of the same strategic merge patch. A
// command that changes an object locally (label, set image, edit) sends
// the difference as a patch rather than the whole object, so what another
// writer changed meanwhile in the rest of the object is kept; apply sends
// a three-way patch so a field removed from the manifest is removed from
// the object.

// TwoWay is the strategic merge patch that turns original into modified,
// two Kubernetes-shaped JSON objects of message md: only what differs,
// lists with a merge key element by element, removed fields as null.
// "{}" when they are the same.
func TwoWay(md protoreflect.MessageDescriptor, original, modified []byte) ([]byte, error) {
	p, err := strategicpatch.CreateTwoWayMergePatchUsingLookupPatchMeta(original, modified, Meta(md))
	if err != nil {
		return nil, apierrors.Invalid("patch", "cannot compute the patch: %v", err)
	}
	return p, nil
}

// ThreeWay is the patch kubectl's client-side apply sends: from current
// (the live object) to what modified (the manifest) asks for, where
// original (the manifest applied last time, the
// kubectl.kubernetes.io/last-applied-configuration annotation) says which
// fields the manifest owned: a field original has and modified no longer
// has is deleted; a field only current has (set by someone else, such as
// replicas after a scale) is kept; a field modified sets is set. With
// overwrite false, a field changed both in current and in modified is a
// conflict error instead of being overwritten.
func ThreeWay(md protoreflect.MessageDescriptor, original, modified, current []byte, overwrite bool) ([]byte, error) {
	p, err := strategicpatch.CreateThreeWayMergePatch(original, modified, current, Meta(md), overwrite)
	if mergepatch.IsConflict(err) {
		return nil, apierrors.New(apierrors.ErrConflict, "%v", err)
	}
	if err != nil {
		return nil, apierrors.Invalid("patch", "cannot compute the patch: %v", err)
	}
	return p, nil
}
