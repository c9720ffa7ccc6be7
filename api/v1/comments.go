package v1

import (
	_ "embed"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// descriptors is api/v1/*.proto as a FileDescriptorSet with source info,
// written by hack/generate.sh beside the generated code.
//
//go:embed descriptors.binpb
var descriptors []byte

var comments = sync.OnceValue(func() map[protoreflect.FullName]string {
	var set descriptorpb.FileDescriptorSet
	out := map[protoreflect.FullName]string{}
	if err := proto.Unmarshal(descriptors, &set); err != nil {
		return out
	}
	for _, f := range set.File {
		byPath := map[string]string{}
		for _, loc := range f.GetSourceCodeInfo().GetLocation() {
			if c := strings.TrimSpace(loc.GetLeadingComments()); c != "" {
				byPath[pathKey(loc.Path)] = c
			}
		}
		pkg := f.GetPackage()
		// Path 4 is FileDescriptorProto.message_type, 2 a message's field,
		// 3 its nested types.
		var walk func(prefix []int32, name string, m *descriptorpb.DescriptorProto)
		walk = func(prefix []int32, name string, m *descriptorpb.DescriptorProto) {
			if c := byPath[pathKey(prefix)]; c != "" {
				out[protoreflect.FullName(name)] = c
			}
			for i, fd := range m.Field {
				if c := byPath[pathKey(append(append([]int32(nil), prefix...), 2, int32(i)))]; c != "" {
					out[protoreflect.FullName(name+"."+fd.GetName())] = c
				}
			}
			for i, n := range m.NestedType {
				walk(append(append([]int32(nil), prefix...), 3, int32(i)), name+"."+n.GetName(), n)
			}
		}
		for i, m := range f.MessageType {
			walk([]int32{4, int32(i)}, pkg+"."+m.GetName(), m)
		}
	}
	return out
})

func pathKey(p []int32) string {
	var b strings.Builder
	for _, x := range p {
		b.WriteString(string(rune('A' + x)))
	}
	return b.String()
}

// Comment is the .proto comment above a message or field of this package
// (full names as tugboat.api.v1.PodSpec or tugboat.api.v1.PodSpec.node_name),
// with its line breaks; "" when it has none. The OpenAPI documents use it
// for descriptions.
func Comment(name protoreflect.FullName) string { return comments()[name] }
