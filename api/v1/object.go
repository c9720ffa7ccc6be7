package v1

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Object is what every stored kind is: a protobuf message with metadata.
// The generated types satisfy it through their GetMetadata method.
type Object interface {
	proto.Message
	GetMetadata() *ObjectMeta
}

// Meta returns obj's metadata, creating an empty one if it is unset, so
// callers can write through it.
func Meta(obj Object) *ObjectMeta {
	if m := obj.GetMetadata(); m != nil {
		return m
	}
	m := obj.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("metadata")
	return m.Mutable(fd).Message().Interface().(*ObjectMeta)
}

// Field returns the descriptor of obj's top-level field name ("spec",
// "status"), or nil if the kind has none.
func Field(obj proto.Message, name string) protoreflect.FieldDescriptor {
	return obj.ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(name))
}

// Key is "namespace/name", or "name" for cluster-scoped objects: the key
// informers index by and work queues carry.
func Key(obj Object) string {
	m := obj.GetMetadata()
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}
