package v1

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// IsIntOrString reports whether field fd is marked (int_or_string): a string
// that holds a number or a name (options.proto).
func IsIntOrString(fd protoreflect.FieldDescriptor) bool {
	o, ok := fd.Options().(*descriptorpb.FieldOptions)
	return ok && o != nil && proto.GetExtension(o, E_IntOrString).(bool)
}

// EmitsZero reports whether field fd is marked (emit_zero): printed in
// JSON even when it holds its zero value (options.proto).
func EmitsZero(fd protoreflect.FieldDescriptor) bool {
	o, ok := fd.Options().(*descriptorpb.FieldOptions)
	return ok && o != nil && proto.GetExtension(o, E_EmitZero).(bool)
}

// PatchMeta is field fd's strategic merge patch metadata (options.proto):
// the merge key of a list of messages and the patch strategy, both empty
// when unset.
func PatchMeta(fd protoreflect.FieldDescriptor) (mergeKey, strategy string) {
	o, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || o == nil {
		return "", ""
	}
	return proto.GetExtension(o, E_PatchMergeKey).(string), proto.GetExtension(o, E_PatchStrategy).(string)
}
