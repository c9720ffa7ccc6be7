package storage

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tugboat/tugboat/api/manifest"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Values stored in an older shape of their kind are read into the current
// one, so nothing a user stored is lost when a field moves. The value in
// etcd stays as it was until the object is next written, which stores the
// current shape. Each upgrade is keyed by the kind's plural and gets the
// stored protobuf bytes (fields the current message no longer has are
// among them) and the object decoded from them.
var upgrades = map[string]func(stored []byte, obj v1.Object) error{
	"controllerrevisions": upgradeRevision,
}

// upgrade applies the kind's upgrade, if it has one.
func upgrade(plural string, stored []byte, obj v1.Object) error {
	if u := upgrades[plural]; u != nil {
		return u(stored, obj)
	}
	return nil
}

// legacyRevisionTemplate is the field number under which a
// ControllerRevision held its pod template before it had data (reserved
// in api/v1/apps.proto).
const legacyRevisionTemplate protowire.Number = 2

// upgradeRevision moves the pod template a ControllerRevision kept in its
// own field into data, as the patch the controllers write now
// (manifest.RevisionData): kubectl and tugctl read both alike.
func upgradeRevision(stored []byte, obj v1.Object) error {
	r := obj.(*v1.ControllerRevision)
	if r.Data != nil {
		return nil
	}
	raw, err := fieldBytes(stored, legacyRevisionTemplate)
	if err != nil || raw == nil {
		return err
	}
	t := &v1.PodTemplateSpec{}
	if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, t); err != nil {
		return fmt.Errorf("the pod template stored before data: %w", err)
	}
	data, err := manifest.RevisionData(t)
	if err != nil {
		return err
	}
	r.Data = data
	return nil
}

// fieldBytes is the concatenation of every occurrence of a length-delimited
// field in a protobuf message (a repeated embedded message merges so), or
// nil if it has none.
func fieldBytes(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return nil, protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return nil, protowire.ParseError(l)
			}
			out = append(out, v...)
			if out == nil {
				out = []byte{}
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return nil, protowire.ParseError(l)
		}
		b = b[l:]
	}
	return out, nil
}
