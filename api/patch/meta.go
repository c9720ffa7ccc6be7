package patch

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// meta is strategicpatch's view of one message (or of a map's values): it
// answers, for a JSON key, the sub-schema and the field's merge key and
// strategy, from the descriptor and its options. Keys the message does not
// have (apiVersion, kind, keys of a map of strings) are leaves with no
// metadata: they are replaced, as in a merge patch.
type meta struct {
	md protoreflect.MessageDescriptor // nil: a leaf
	// mapOf is true when this meta stands for a map field whose values are
	// md: every key looks up md itself.
	mapOf bool
}

// Meta is the strategic merge patch metadata of message md.
func Meta(md protoreflect.MessageDescriptor) strategicpatch.LookupPatchMeta { return meta{md: md} }

func (m meta) Name() string {
	if m.md == nil {
		return ""
	}
	return string(m.md.Name())
}

func (m meta) field(key string) protoreflect.FieldDescriptor {
	if m.md == nil {
		return nil
	}
	return m.md.Fields().ByJSONName(key)
}

func patchMeta(fd protoreflect.FieldDescriptor) strategicpatch.PatchMeta {
	var pm strategicpatch.PatchMeta
	key, strategy := v1.PatchMeta(fd)
	pm.SetPatchMergeKey(key)
	if strategy != "" {
		pm.SetPatchStrategies(strings.Split(strategy, ","))
	}
	return pm
}

func (m meta) LookupPatchMetadataForStruct(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	if m.mapOf {
		return meta{md: m.md}, strategicpatch.PatchMeta{}, nil
	}
	fd := m.field(key)
	if fd == nil {
		return meta{}, strategicpatch.PatchMeta{}, nil
	}
	if fd.IsMap() {
		if v := fd.MapValue(); v.Kind() == protoreflect.MessageKind {
			return meta{md: v.Message(), mapOf: true}, patchMeta(fd), nil
		}
		return meta{}, patchMeta(fd), nil
	}
	if fd.Kind() == protoreflect.MessageKind {
		return meta{md: fd.Message()}, patchMeta(fd), nil
	}
	return meta{}, patchMeta(fd), nil
}

func (m meta) LookupPatchMetadataForSlice(key string) (strategicpatch.LookupPatchMeta, strategicpatch.PatchMeta, error) {
	fd := m.field(key)
	if fd == nil || !fd.IsList() {
		return meta{}, strategicpatch.PatchMeta{}, nil
	}
	if fd.Kind() == protoreflect.MessageKind {
		return meta{md: fd.Message()}, patchMeta(fd), nil
	}
	return meta{}, patchMeta(fd), nil
}
